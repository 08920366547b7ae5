//! Telling a server that is not there (the connection refused, the host unknown) from any
//! other failure to connect, and the error that says so with the address and what to do.
//!
//! Invariant: a refusal is told by the I/O error's kind ([`io::ErrorKind::ConnectionRefused`]),
//! never by the platform's wording or number; only a failed name lookup, which has no kind of
//! its own, is told by the resolver's words.

use std::io;

use crate::error::{ErrorKind, ProviderError};

/// Why a connection could not be made, when it says the server is not there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NotThere {
    /// The host answered that nothing listens on the port (ECONNREFUSED: 111 on Linux, 61 on
    /// macOS; std names both [`io::ErrorKind::ConnectionRefused`]).
    Refused,
    /// The host's name did not resolve.
    UnknownHost,
}

/// What the error's source chain says of the server: the I/O error's kind where there is one.
/// A failed name lookup has no [`io::ErrorKind`] of its own (std reports getaddrinfo's failure
/// as uncategorized), so it is told by the resolver's own wording, which hyper's connector
/// fixes as "dns error".
fn not_there(err: &(dyn std::error::Error + 'static)) -> Option<NotThere> {
    let mut source = Some(err);
    let mut lookup_failed = false;
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<io::Error>() {
            if io.kind() == io::ErrorKind::ConnectionRefused {
                return Some(NotThere::Refused);
            }
        }
        let text = cause.to_string();
        lookup_failed |= text.starts_with("dns error") || text.contains("failed to lookup address");
        source = cause.source();
    }
    lookup_failed.then_some(NotThere::UnknownHost)
}

/// The error for a server that is not there — the connection refused, the host unknown — naming
/// the address and what to do; `None` for any other failure.
pub(super) fn unreachable(url: &str, err: &reqwest::Error) -> Option<ProviderError> {
    let base = url.rsplit_once("/v1/").map_or(url, |(base, _)| base);
    let message = match not_there(err)? {
        NotThere::Refused => format!(
            "nothing answers at {base} (connection refused): start the server there, or point \
             --base-url (base_url in config.toml) at one that runs"
        ),
        NotThere::UnknownHost => format!(
            "the host of {base} cannot be found (DNS lookup failed): check the address in \
             --base-url (base_url in config.toml) and the network"
        ),
    };
    Some(ProviderError::new(ErrorKind::Unreachable, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that wraps another, as hyper's connector wraps the socket's.
    #[derive(Debug)]
    struct Wrapped(&'static str, io::Error);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.1)
        }
    }

    #[test]
    fn a_refused_connection_is_told_by_its_kind_not_its_words() {
        // Whatever the platform's wording or number (111 on Linux, 61 on macOS), the kind.
        let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "verbindung abgelehnt");
        let wrapped = Wrapped("tcp connect error", refused);
        assert_eq!(not_there(&wrapped), Some(NotThere::Refused));
        // The words alone, on an error of another kind, are not a refusal.
        let other = io::Error::other("Connection refused (os error 111)");
        assert_eq!(not_there(&Wrapped("tcp connect error", other)), None);
        let reset = io::Error::new(io::ErrorKind::ConnectionReset, "reset by peer");
        assert_eq!(not_there(&Wrapped("tcp connect error", reset)), None);
    }

    #[test]
    fn a_failed_name_lookup_is_an_unknown_host() {
        let lookup = io::Error::other("failed to lookup address information: Name not known");
        assert_eq!(not_there(&Wrapped("dns error", lookup)), Some(NotThere::UnknownHost));
    }
}
