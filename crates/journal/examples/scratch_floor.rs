#![allow(clippy::all, clippy::pedantic, clippy::print_stdout, clippy::unwrap_used)]
use std::time::Instant;
fn count3(s: &[u8]) -> (u32, u32, u32) {
    let (mut quotes, mut after_one, mut after_two) = (0u32, 0u32, 0u32);
    let n = s.len();
    for ((&x, &y), &z) in s[..n - 2].iter().zip(&s[1..n - 1]).zip(&s[2..]) {
        let q = u32::from(z == b'"');
        let b1 = q & u32::from(y == b'\\');
        quotes += q;
        after_one += b1;
        after_two += b1 & u32::from(x == b'\\');
    }
    (quotes, after_one, after_two)
}
fn count3b(s: &[u8]) -> (u32, u32, u32) {
    let (mut quotes, mut after_one, mut after_two) = (0u32, 0u32, 0u32);
    let n = s.len();
    let (a, b, c) = (&s[..n - 2], &s[1..n - 1], &s[2..]);
    for i in 0..n - 2 {
        let q = u32::from(c[i] == b'"');
        let b1 = q & u32::from(b[i] == b'\\');
        quotes += q;
        after_one += b1;
        after_two += b1 & u32::from(a[i] == b'\\');
    }
    (quotes, after_one, after_two)
}
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let r = count3(&bytes);
        let t1 = t.elapsed();
        let r2 = count3b(&bytes);
        let t2 = t.elapsed();
        let m = memchr::memchr_iter(b'"', &bytes).count();
        let t3 = t.elapsed();
        println!("zip {:?} {r:?} | index {:?} {r2:?} | memchr_iter {:?} {m}", t1, t2 - t1, t3 - t2);
    }
}
