//! How figures read, the same on every surface (the terminal UI, `exec`, `sessions`).

/// US dollars as a person reads them: cents for a cent or more, four places below it.
pub fn dollars(usd: f64) -> String {
    if usd >= 0.01 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
}

/// A size as a person reads it: `12 KB` (rounded up), `1.4 MB`.
pub fn size(bytes: u64) -> String {
    if bytes < 1024 * 1024 {
        format!("{} KB", bytes.div_ceil(1024))
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// An image a message carries: `shot.png 64×48 · 12 KB`, and whether it was scaled down.
pub fn image(i: &codewhale_protocol::ImageInfo) -> String {
    let scaled = if i.scaled { " · scaled to fit 2048 px" } else { "" };
    format!("{} {}×{} · {}{scaled}", i.name, i.width, i.height, size(i.bytes))
}

#[cfg(test)]
mod tests {
    #[test]
    fn cents_above_a_cent_and_four_places_below() {
        assert_eq!(super::dollars(1.234), "$1.23");
        assert_eq!(super::dollars(0.0123), "$0.01");
        assert_eq!(super::dollars(0.00123), "$0.0012");
        assert_eq!(super::dollars(0.0), "$0.0000");
    }

    #[test]
    fn sizes_and_images_read_the_same_everywhere() {
        assert_eq!(
            (super::size(12_000), super::size(1_500_000)),
            ("12 KB".into(), "1.4 MB".into())
        );
        let shot = codewhale_protocol::ImageInfo {
            name: "wide.png".into(),
            width: 2048,
            height: 683,
            bytes: 4096,
            scaled: true,
        };
        assert_eq!(super::image(&shot), "wide.png 2048×683 · 4 KB · scaled to fit 2048 px");
    }
}
