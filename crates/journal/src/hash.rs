//! One fast 64-bit hash, FxHash-style (multiply-rotate over 8-byte little-endian words, then
//! the remaining bytes, then the length), streamed: the id index hashes ids with it and the
//! index sidecar checksums itself with it. Not resistant to crafted collisions, which neither
//! needs: ids come from the session's own file, and the checksum guards against damage, not
//! against an attacker (who could edit the journal itself).

/// A 64-bit hash of a byte stream, the same however the stream is cut into chunks.
pub(crate) struct Checksum {
    h: u64,
    carry: [u8; 8],
    filled: usize,
    total: u64,
}

impl Checksum {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    pub(crate) fn new() -> Checksum {
        Checksum { h: 0, carry: [0; 8], filled: 0, total: 0 }
    }

    fn word(&mut self, w: u64) {
        self.h = (self.h.rotate_left(5) ^ w).wrapping_mul(Self::K);
    }

    pub(crate) fn update(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.filled > 0 {
            let take = (8 - self.filled).min(bytes.len());
            self.carry[self.filled..self.filled + take].copy_from_slice(&bytes[..take]);
            self.filled += take;
            bytes = &bytes[take..];
            if self.filled < 8 {
                return;
            }
            self.word(u64::from_le_bytes(self.carry));
            self.filled = 0;
        }
        let mut words = bytes.chunks_exact(8);
        for w in &mut words {
            let mut b = [0u8; 8];
            b.copy_from_slice(w);
            self.word(u64::from_le_bytes(b));
        }
        let rest = words.remainder();
        self.carry[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    pub(crate) fn finish(mut self) -> u64 {
        for i in 0..self.filled {
            let b = self.carry[i];
            self.word(u64::from(b));
        }
        let total = self.total;
        self.word(total);
        self.h
    }
}

/// The hash of `bytes`.
pub(crate) fn hash(bytes: &[u8]) -> u64 {
    let mut c = Checksum::new();
    c.update(bytes);
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The sidecar is hashed field by field when written and in buffer-sized pieces when
        /// read: however the bytes are cut, the hash is the same.
        #[test]
        fn the_hash_does_not_depend_on_how_the_bytes_are_cut(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
            cuts in proptest::collection::vec(0usize..200, 0..6),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort_unstable();
            let mut c = Checksum::new();
            let mut from = 0;
            for at in cuts.into_iter().chain([bytes.len()]) {
                c.update(&bytes[from..at]);
                from = at;
            }
            proptest::prop_assert_eq!(c.finish(), hash(&bytes));
        }
    }

    #[test]
    fn the_length_counts() {
        assert_ne!(hash(b""), hash(b"\0"));
        assert_ne!(hash(b"ab"), hash(b"ab\0"));
    }
}
