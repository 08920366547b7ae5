//! Which addresses `web_fetch` treats as private (docs/tools.md, *`web_fetch`*): the ones that
//! reach this machine or its network rather than the public internet, so a page or a prompt
//! cannot turn the tool against a local service (a database's HTTP port, a cloud metadata
//! endpoint, a router's admin page).
//!
//! IPv4: loopback (127/8), "this network" (0/8), RFC 1918 (10/8, 172.16/12, 192.168/16), shared
//! address space (RFC 6598, 100.64/10), link-local (169.254/16), and — never a public web server
//! either — multicast, the reserved 240/4 and the broadcast address. IPv6: the unspecified
//! address (`::`), loopback (`::1`), unique local (RFC 4193, fc00::/7), link-local (fe80::/10),
//! the old site-local (fec0::/10), multicast, and every address that embeds an IPv4 one judged
//! by that IPv4 address: IPv4-mapped (`::ffff:0:0/96`), IPv4-compatible (`::/96`), NAT64
//! (`64:ff9b::/96`) and 6to4 (`2002::/16`). Pure functions.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is private (module docs).
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => private_v6(v6),
    }
}

fn private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || a == 0
        // Shared address space (carrier-grade NAT), RFC 6598.
        || (a == 100 && (64..128).contains(&b))
        // Reserved for future use.
        || a >= 240
}

fn private_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = embedded_v4(ip) {
        return private_v4(v4);
    }
    let first = ip.segments()[0];
    ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // Unique local, RFC 4193.
        || (first & 0xfe00) == 0xfc00
        // Link-local, and the site-local range it replaced.
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
}

/// The IPv4 address an IPv6 one carries, for the forms that route to it: IPv4-mapped,
/// IPv4-compatible, NAT64's well-known prefix and 6to4.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        // ::ffff:a.b.c.d
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => Some(low(hi, lo)),
        // ::a.b.c.d (not :: and ::1, judged as themselves)
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 => Some(low(hi, lo)),
        // 64:ff9b::a.b.c.d
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        // 2002:aabb:ccdd::/48
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private(text: &str) -> bool {
        is_private(text.parse().unwrap())
    }

    #[test]
    fn local_and_private_ranges_are_private() {
        for ip in [
            "127.0.0.1",
            "127.255.0.9",
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "100.127.255.254",
            "169.254.169.254",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.1.2.3",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:0001::1",
            "2002:c0a8:0101::",
        ] {
            assert!(private(ip), "{ip}");
        }
    }

    #[test]
    fn public_addresses_are_not() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "151.101.1.69",
            "2606:4700::1111",
            "2a00:1450:4001::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
        ] {
            assert!(!private(ip), "{ip}");
        }
    }
}
