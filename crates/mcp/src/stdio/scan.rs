//! Reading a JSON-RPC message's top-level `id` as its bytes stream past, without keeping the
//! message: what an oversized line answers. Servers put the id before the result (the Python
//! SDK) or after it (the TypeScript SDK), so the whole line is scanned.
//!
//! Invariants: only keys of the outermost object count (an `"id"` inside the result is
//! content); at most [`MAX_ID`] bytes are kept; the scanner needs no more memory however long
//! the line is.

/// The longest id kept; a longer one is not answered.
const MAX_ID: usize = 256;
/// Keys that matter are this short; longer ones are not kept.
const MAX_KEY: usize = 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Key {
    #[default]
    Other,
    Id,
    Method,
    /// `result` or `error`: the message is a response.
    Body,
}

/// See the module documentation.
#[derive(Debug, Default)]
pub struct IdScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// Inside the outermost object, the next string is a key.
    expect_key: bool,
    in_key: bool,
    key: Vec<u8>,
    /// The key whose value comes next (or is being read).
    current: Key,
    capturing: bool,
    raw: Vec<u8>,
    id: Option<serde_json::Value>,
    has_method: bool,
    has_body: bool,
    /// The message is not a JSON object: nothing to answer.
    not_object: bool,
}

impl IdScanner {
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    /// The id of the response this line is, if known: before the line ended only once its
    /// `result` or `error` started (a request names its `method` first), at its end whenever
    /// it has an id and no `method`.
    pub fn response_id(&self, at_end: bool) -> Option<serde_json::Value> {
        if self.not_object || self.has_method || !(at_end || self.has_body) {
            return None;
        }
        self.id.clone()
    }

    fn byte(&mut self, b: u8) {
        if self.capturing {
            self.raw.push(b);
            if self.raw.len() > MAX_ID {
                self.capturing = false;
                self.raw.clear();
            }
        }
        if self.in_string {
            if self.in_key && self.key.len() <= MAX_KEY {
                self.key.push(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.in_key {
                    self.in_key = false;
                    self.current = match self.key.as_slice() {
                        b"id\"" => Key::Id,
                        b"method\"" => Key::Method,
                        b"result\"" | b"error\"" => Key::Body,
                        _ => Key::Other,
                    };
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.in_key = true;
                    self.key.clear();
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 {
                    if b == b'{' {
                        self.expect_key = true;
                    } else {
                        self.not_object = true;
                    }
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.finish_value();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 => match self.current {
                Key::Id => {
                    self.capturing = true;
                    self.raw.clear();
                }
                Key::Method => self.has_method = true,
                Key::Body => self.has_body = true,
                Key::Other => {}
            },
            b',' if self.depth == 1 => {
                self.finish_value();
                self.expect_key = true;
            }
            _ => {}
        }
    }

    /// The outermost object's current value ended; if it was the id, keep it.
    fn finish_value(&mut self) {
        if !self.capturing {
            return;
        }
        self.capturing = false;
        // The byte that ended the value was pushed too.
        self.raw.pop();
        let value = serde_json::from_slice::<serde_json::Value>(&self.raw).ok();
        if let Some(id) = value.filter(|v| v.is_number() || v.is_string()) {
            self.id = Some(id);
        }
        self.raw.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &str) -> IdScanner {
        let mut s = IdScanner::default();
        s.feed(text.as_bytes());
        s
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is() {
        let first = scan(r#"{"jsonrpc":"2.0","id":12,"result":{"id":99,"text":"a"#);
        assert_eq!(first.response_id(false), Some(serde_json::json!(12)));
        let last = scan(r#"{"result":{"id":99,"x":"}\"id\":5"},"jsonrpc":"2.0", "id" : "r-1" }"#);
        assert_eq!(last.response_id(false), Some(serde_json::json!("r-1")));
        assert_eq!(last.response_id(true), Some(serde_json::json!("r-1")));
    }

    #[test]
    fn requests_batches_and_odd_ids_are_not_answered() {
        let request = scan(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"#);
        assert_eq!(request.response_id(true), None);
        let request_late = scan(r#"{"id":1,"params":{},"method":"ping"}"#);
        assert_eq!(request_late.response_id(true), None);
        assert_eq!(scan(r#"[{"id":1,"result":{}}]"#).response_id(true), None);
        assert_eq!(scan(r#"{"id":{"a":1},"result":{}}"#).response_id(true), None);
        assert_eq!(scan(r#"{"id":null,"error":{}}"#).response_id(true), None);
        // Before the line ends, an id without a result yet could still be a request's.
        assert_eq!(scan(r#"{"id":4,"params":"#).response_id(false), None);
    }
}
