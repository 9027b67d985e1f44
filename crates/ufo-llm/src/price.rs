//! Cost of a call from its token usage and a price per 1000 tokens (the price table itself
//! lives in the configuration).

use ufo_core::ports::Usage;

/// Prices of one model, per 1000 tokens, in any currency (the configuration's).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Price {
    /// Price of 1000 prompt tokens.
    pub input_per_1k: f64,
    /// Price of 1000 completion tokens.
    pub output_per_1k: f64,
}

impl Price {
    /// A price from the two rates.
    pub fn new(input_per_1k: f64, output_per_1k: f64) -> Self {
        Self {
            input_per_1k,
            output_per_1k,
        }
    }

    /// The cost of `usage` at this price.
    pub fn cost(&self, usage: &Usage) -> f64 {
        usage.prompt_tokens as f64 / 1000.0 * self.input_per_1k
            + usage.completion_tokens as f64 / 1000.0 * self.output_per_1k
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_adds_both_sides() {
        let p = Price::new(2.5, 10.0);
        let u = Usage {
            prompt_tokens: 2000,
            completion_tokens: 500,
        };
        assert!((p.cost(&u) - 10.0).abs() < 1e-9);
        assert_eq!(Price::default().cost(&u), 0.0);
    }
}
