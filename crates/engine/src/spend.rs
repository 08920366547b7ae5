//! What a session's model requests cost: each reply's usage priced at its model's price
//! ([`crate::config::Config::price_of`]), summed for the turn and for the run, with summary
//! requests counted apart ([`Meter`], shared with the summarizer, background passes included).
//!
//! Invariant: a figure is `None` as soon as one request in it had no known price — a total
//! never silently leaves a request out, and no price is ever guessed.

use std::sync::{Arc, Mutex};

use codewhale_provider::{Price, Usage};

/// Requests, tokens and dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub requests: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The dollars of the priced requests.
    pub priced_usd: f64,
    /// Requests whose model had no known price.
    pub unpriced: u32,
}

impl Spent {
    /// Adds one reply.
    pub fn add(&mut self, usage: &Usage, price: Option<&Price>) {
        self.requests += 1;
        self.input_tokens += usage.input_tokens;
        self.output_tokens += usage.output_tokens;
        match price {
            Some(price) => self.priced_usd += price.cost_usd(usage),
            None => self.unpriced += 1,
        }
    }

    /// What it cost, when every request had a price.
    pub fn cost_usd(&self) -> Option<f64> {
        (self.unpriced == 0).then_some(self.priced_usd)
    }

    /// What was spent since `earlier` (a reading of the same meter).
    pub fn since(&self, earlier: &Spent) -> Spent {
        Spent {
            requests: self.requests.saturating_sub(earlier.requests),
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            priced_usd: (self.priced_usd - earlier.priced_usd).max(0.0),
            unpriced: self.unpriced.saturating_sub(earlier.unpriced),
        }
    }
}

/// A running total several tasks add to (the session's replies, its summary requests).
#[derive(Debug, Clone, Default)]
pub struct Meter(Arc<Mutex<Spent>>);

impl Meter {
    pub fn add(&self, usage: &Usage, price: Option<&Price>) {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).add(usage, price);
    }

    /// Adds what another meter counted (a `task` child's spend joins its parent's).
    pub fn absorb(&self, other: &Spent) {
        let mut mine = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        mine.requests += other.requests;
        mine.input_tokens += other.input_tokens;
        mine.output_tokens += other.output_tokens;
        mine.priced_usd += other.priced_usd;
        mine.unpriced += other.unpriced;
    }

    pub fn read(&self) -> Spent {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64) -> Usage {
        Usage { input_tokens: input, output_tokens: output, ..Usage::default() }
    }

    #[test]
    fn one_unpriced_request_makes_the_total_unknown() {
        let price = Price { input: 2.0, cached_input: None, output: 8.0, cache_write: None };
        let meter = Meter::default();
        meter.add(&usage(1_000_000, 0), Some(&price));
        let first = meter.read();
        assert_eq!(first.cost_usd(), Some(2.0));
        meter.add(&usage(10, 10), None);
        let now = meter.read();
        assert_eq!(now.cost_usd(), None);
        assert_eq!((now.requests, now.input_tokens), (2, 1_000_010));
        let since = now.since(&first);
        assert_eq!((since.requests, since.unpriced, since.cost_usd()), (1, 1, None));
        assert_eq!(Spent::default().cost_usd(), Some(0.0), "nothing spent costs nothing");
    }
}
