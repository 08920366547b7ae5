//! `exec`'s prompt (and `-p`'s): the words of PROMPT, or a piped standard input (docs/cli.md,
//! *exec and the prompt*).
//!
//! Invariants: with PROMPT given (other than `-`), standard input is never read; a terminal on
//! standard input is never taken for a prompt; at most [`MAX_PIPED_PROMPT`] bytes are read,
//! and one more means the prompt is refused, never cut.

use std::io::Read as _;

/// The most a piped prompt may hold (DESIGN's limits: 1 MiB).
pub const MAX_PIPED_PROMPT: u64 = 1024 * 1024;

/// Why there is no prompt to send (said as one sentence; exit code 2).
#[derive(Debug, PartialEq, Eq)]
pub enum PromptError {
    Missing,
    TooLarge,
    NotText,
    Read(String),
}

impl std::fmt::Display for PromptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PromptError::Missing => f.write_str("no prompt: give PROMPT or pipe one"),
            PromptError::TooLarge => f.write_str(
                "the piped prompt is over 1 MiB; put the text in a file of the workspace and ask \
                 the model to read it, or send less",
            ),
            PromptError::NotText => f.write_str("the piped prompt is not UTF-8 text"),
            PromptError::Read(e) => write!(f, "cannot read the piped prompt: {e}"),
        }
    }
}

/// Whether the prompt comes from standard input: no PROMPT, or `-`.
pub fn reads_stdin(words: &[String]) -> bool {
    words.is_empty() || (words.len() == 1 && words[0] == "-")
}

/// The prompt: the words of PROMPT joined with spaces, or — without them, or with `-` — what
/// is piped on `stdin`, read to its end. A terminal on stdin is never read (it is no prompt),
/// and with PROMPT given stdin is not touched at all.
pub fn read(
    words: &[String],
    stdin_is_terminal: bool,
    stdin: &mut impl std::io::Read,
) -> Result<String, PromptError> {
    if !reads_stdin(words) {
        let text = words.join(" ");
        return if text.trim().is_empty() { Err(PromptError::Missing) } else { Ok(text) };
    }
    if stdin_is_terminal {
        return Err(PromptError::Missing);
    }
    let mut bytes = Vec::new();
    stdin
        .take(MAX_PIPED_PROMPT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| PromptError::Read(e.to_string()))?;
    if bytes.len() as u64 > MAX_PIPED_PROMPT {
        return Err(PromptError::TooLarge);
    }
    let text = String::from_utf8(bytes).map_err(|_| PromptError::NotText)?;
    if text.trim().is_empty() {
        return Err(PromptError::Missing);
    }
    // `echo … |` ends the text with a newline nobody typed as part of the prompt.
    Ok(text.trim_end_matches(['\n', '\r']).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_prompt_given_never_reads_stdin() {
        struct Untouchable;
        impl std::io::Read for Untouchable {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                panic!("stdin was read")
            }
        }
        assert_eq!(read(&words(&["fix", "it"]), false, &mut Untouchable).unwrap(), "fix it");
        assert_eq!(read(&words(&["  "]), false, &mut Untouchable), Err(PromptError::Missing));
        // A terminal is never taken for a prompt.
        assert_eq!(read(&[], true, &mut Untouchable), Err(PromptError::Missing));
        assert_eq!(read(&words(&["-"]), true, &mut Untouchable), Err(PromptError::Missing));
    }

    #[test]
    fn a_piped_prompt_is_read_whole_up_to_one_mib() {
        let piped = |text: &[u8], w: &[&str]| read(&words(w), false, &mut &text[..]);
        assert_eq!(piped(b"explain this\nplease\n", &[]).unwrap(), "explain this\nplease");
        assert_eq!(piped(b"from a dash\n", &["-"]).unwrap(), "from a dash");
        assert_eq!(piped(b"", &[]), Err(PromptError::Missing));
        assert_eq!(piped(b" \n\n", &["-"]), Err(PromptError::Missing));
        assert_eq!(piped(&[0xff, 0xfe], &[]), Err(PromptError::NotText));
        let mib = vec![b'a'; MAX_PIPED_PROMPT as usize];
        assert_eq!(piped(&mib, &[]).map(|p| p.len()), Ok(mib.len()));
        let over = vec![b'a'; MAX_PIPED_PROMPT as usize + 1];
        assert_eq!(piped(&over, &[]), Err(PromptError::TooLarge));
        assert!(PromptError::TooLarge.to_string().starts_with("the piped prompt is over 1 MiB"));
    }
}
