//! How figures read, the same on every surface (the terminal UI, `exec`, `sessions`).

/// US dollars as a person reads them: cents for a cent or more, four places below it.
pub fn dollars(usd: f64) -> String {
    if usd >= 0.01 {
        format!("${usd:.2}")
    } else {
        format!("${usd:.4}")
    }
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
}
