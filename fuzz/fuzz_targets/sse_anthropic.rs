//! The Anthropic Messages stream: SSE framing fed in arbitrary chunks, then the decoder; never a
//! panic, whatever the bytes.
#![no_main]

use codewhale_provider::anthropic::decode::Decoder;
use codewhale_provider::sse::SseParser;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(1, |b| usize::from(*b % 31) + 1);
    let mut parser = SseParser::new();
    let mut decoder = Decoder::new();
    let mut events = Vec::new();
    let mut out = Vec::new();
    for chunk in data.chunks(split) {
        if parser.feed(chunk, &mut events).is_err() {
            return;
        }
        for e in events.drain(..) {
            if decoder.on_data(&e.data, &mut out).is_err() {
                return;
            }
        }
    }
    let _ = parser.finish(&mut events);
    for e in events.drain(..) {
        let _ = decoder.on_data(&e.data, &mut out);
    }
    let _ = decoder.is_done();
});
