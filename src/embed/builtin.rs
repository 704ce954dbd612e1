//! The builtin embedding model (feature `embed-builtin`): paraphrase-MiniLM-L3-v2 as
//! the crate `pocket-encoder` bundles it (4-bit weights expanded to f32 once per
//! process, 384 dimensions, at most 128 tokens per text), run in process on the CPU.
//! No download, no endpoint, no key.

use super::{BUILTIN_DIMENSIONS, BUILTIN_MODEL, EmbedError, Embedder};

/// The model reads at most the first 128 tokens of a text, which in any real text lie
/// well within its first 16 KiB; the crate refuses a text over 64 KiB, so a longer
/// one is cut here first, at a character boundary.
const MAX_TEXT_BYTES: usize = 16 * 1024;

/// Texts per call to the model (the crate takes at most 4 MiB per call).
const CHUNK: usize = 64;

/// Texts embedded between two looks at the clock on the query path (about 0.2 s of
/// long memories on one thread).
const BUDGET_CHUNK: usize = 8;

/// The builtin model: its id and length are [`BUILTIN_MODEL`] and
/// [`BUILTIN_DIMENSIONS`] (a test holds them to the crate's own).
pub(crate) struct Builtin {
    encoder: pocket_encoder::Encoder,
}

impl Builtin {
    /// Loads the weights (once per process; later calls share them).
    pub(crate) fn new() -> Result<Builtin, EmbedError> {
        let encoder = pocket_encoder::Encoder::new().map_err(failed)?;
        Ok(Builtin { encoder })
    }
}

fn failed(e: pocket_encoder::Error) -> EmbedError {
    EmbedError::Builtin {
        reason: e.to_string(),
    }
}

/// `text` without leading whitespace (which the tokenizer skips anyway), cut to at
/// most [`MAX_TEXT_BYTES`] at a character boundary; a text of whitespace only (which
/// the crate refuses, failing the whole batch) becomes `-`.
fn prepared(text: &str) -> &str {
    let text = text.trim_start();
    if text.is_empty() {
        return "-";
    }
    let mut end = text.len().min(MAX_TEXT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl Embedder for Builtin {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(CHUNK) {
            let cut: Vec<&str> = chunk.iter().map(|t| prepared(t)).collect();
            out.extend(self.encoder.embed(&cut).map_err(failed)?);
        }
        Ok(out)
    }

    fn embed_within(
        &self,
        texts: &[String],
        budget: std::time::Duration,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let start = std::time::Instant::now();
        let mut out = Vec::with_capacity(texts.len());
        // The first text (the query) whatever the budget, then one small chunk at a
        // time while time is left.
        let (first, rest) = texts.split_at(texts.len().min(1));
        out.extend(self.embed(first)?);
        for chunk in rest.chunks(BUDGET_CHUNK) {
            if start.elapsed() >= budget {
                break;
            }
            out.extend(self.embed(chunk)?);
        }
        Ok(out)
    }

    fn dimensions(&self) -> usize {
        BUILTIN_DIMENSIONS
    }

    fn model_id(&self) -> &str {
        BUILTIN_MODEL
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The real model: unit vectors of 384 values, in order, and a paraphrase closer
    // than an unrelated sentence.
    #[test]
    fn the_builtin_model_embeds_meaning() {
        let m = Builtin::new().unwrap();
        let texts: Vec<String> = [
            "what does she like to drink in the morning?",
            "Caroline always starts her day with a flat white.",
            "The deploy pipeline runs the integration tests on every merge.",
            "   ",
            &"long text ".repeat(10_000),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let v = m.embed(&texts).unwrap();
        assert_eq!(v.len(), 5);
        for x in &v {
            assert_eq!(x.len(), 384);
            let n: f32 = x.iter().map(|a| a * a).sum::<f32>().sqrt();
            assert!((n - 1.0).abs() < 1e-3, "{n}");
        }
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]) + 0.1);
        assert_eq!(m.model_id(), "pocket-encoder/minilm-l3-q4-g32-v1");
        assert_eq!(m.embed(&texts[..1]).unwrap()[0], v[0]);
    }

    #[test]
    fn long_texts_are_cut_at_a_character_boundary() {
        let t = "é".repeat(MAX_TEXT_BYTES);
        let cut = prepared(&t);
        assert!(cut.len() <= MAX_TEXT_BYTES && cut.len() >= MAX_TEXT_BYTES - 1);
        assert_eq!(prepared("\n \t"), "-");
        assert_eq!(prepared("a b"), "a b");
        // Whitespace longer than the cut does not leave a blank text.
        let padded = format!("{}word", " ".repeat(MAX_TEXT_BYTES * 2));
        assert_eq!(prepared(&padded), "word");
    }
}
