//! What a request costs: the published per-million-token prices of the model catalog
//! (`assets/models.toml`, `price = {…}` and `[prices] read`) and the arithmetic from a reply's
//! usage to US dollars.
//!
//! Invariant: a price follows the model id alone — whatever the base URL — and only an exact
//! id (or the id without its `vendor/` prefix and `:tag`) has one: a family match or the
//! default never prices a model, so an unknown model shows tokens only, never a made-up cost.

use serde::Deserialize;

use crate::event::Usage;

/// A model's list price in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Prompt tokens read fresh.
    pub input: f64,
    /// Prompt tokens read from the provider's prompt cache (default: `input`).
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// Generated tokens.
    pub output: f64,
    /// Prompt tokens written to the prompt cache, where the provider charges that apart
    /// (Anthropic: 1.25 × input; default: `input`).
    #[serde(default)]
    pub cache_write: Option<f64>,
}

impl Price {
    /// What a reply with `usage` cost. `usage.input_tokens` is the whole prompt, cache reads
    /// and writes included (the normalized usage).
    pub fn cost_usd(&self, usage: &Usage) -> f64 {
        let cached = usage.cache_read_tokens;
        let written = usage.cache_write_tokens;
        let fresh = usage.input_tokens.saturating_sub(cached).saturating_sub(written);
        let per_token = |tokens: u64, price: f64| tokens as f64 * price / 1_000_000.0;
        per_token(fresh, self.input)
            + per_token(cached, self.cached_input.unwrap_or(self.input))
            + per_token(written, self.cache_write.unwrap_or(self.input))
            + per_token(usage.output_tokens, self.output)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{price_of, prices_read};

    fn usage(input: u64, cached: u64, written: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            cache_read_tokens: cached,
            cache_write_tokens: written,
            output_tokens: output,
        }
    }

    #[test]
    fn cache_reads_writes_and_output_are_priced_apart() {
        let sonnet = price_of("claude-sonnet-4-5").unwrap();
        // 1M fresh at $3, 1M cached at $0.30, 1M written at $3.75, 1M out at $15.
        let cost = sonnet.cost_usd(&usage(3_000_000, 1_000_000, 1_000_000, 1_000_000));
        assert!((cost - 22.05).abs() < 1e-9, "{cost}");
        let gpt = price_of("gpt-4.1").unwrap();
        let cost = gpt.cost_usd(&usage(10_000, 8_000, 0, 500));
        // 2,000 fresh at $2, 8,000 cached at $0.50, 500 out at $8.
        assert!((cost - (0.004 + 0.004 + 0.004)).abs() < 1e-12, "{cost}");
    }

    #[test]
    fn prices_follow_the_id_and_unknown_models_have_none() {
        assert_eq!(price_of("openai/gpt-4.1"), price_of("gpt-4.1"));
        assert_eq!(price_of("deepseek-chat:latest"), price_of("deepseek-chat"));
        // A family match gives a window, never a price.
        assert!(crate::catalog::lookup("gpt-4.1-2025-04-14").verified);
        assert_eq!(price_of("gpt-4.1-2025-04-14"), None);
        assert_eq!(price_of("qwen2.5-coder:32b"), None);
        assert_eq!(price_of("my-local-model"), None);
        assert_eq!(prices_read().len(), 10);
    }
}
