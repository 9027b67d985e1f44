//! A sentence-transformers BERT model (all-MiniLM-L6-v2 and its kin) run in the process, on
//! the CPU, from its folder as published: `config.json`, `tokenizer.json`, `model.safetensors`,
//! `1_Pooling/config.json` (and `modules.json`, which says whether vectors are normalised).
//!
//! Why our own forward pass rather than candle or tract: the architecture is one fixed
//! encoder (embeddings, six layers of attention and feed-forward, pooling), about 300 lines
//! here; the frameworks add hundreds of crates and minutes of compile time on a 2-core machine
//! for it. The matrix products go through `ndarray` (its `dot` is matrixmultiply's packed
//! SIMD kernels behind a safe API; the workspace forbids `unsafe`), the WordPiece tokenizer is
//! read from `tokenizer.json` and checked against the reference tokenizer's ids in the tests.
//! Vectors agree with the reference implementation to 1e-4 (the unit tests keep its numbers).
//!
//! Measured (release, one thread, on a 2-core machine at load average 9 from other builds, so
//! an idle machine is some 2–4 times faster): an 11-token query 20 ms, a 128-token page 86 ms;
//! loading all-MiniLM-L6-v2 0.3 s. [`SentenceModel::embed_many`] embeds a batch with one
//! product per linear layer: indexing all LibreOffice and GIMP help took 25 % less CPU time
//! (175 → 130 s) than one product per text (docs/knowledge.md).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ndarray::{Array1, Array2, ArrayView2, Axis, Slice};
use serde::Deserialize;
use unicode_normalization::UnicodeNormalization;

/// Largest `model.safetensors` read (all-MiniLM-L6-v2 is 91 MB; BERT-large 1.3 GB).
pub const MAX_WEIGHTS_BYTES: u64 = 2 << 30;
/// Largest JSON file of a model folder read (tokenizer.json is 0.5 MB).
const MAX_JSON_BYTES: u64 = 64 << 20;

/// A model folder that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("embedding model {}: {what}; give the folder of a sentence-transformers BERT model as published (config.json, tokenizer.json, model.safetensors, 1_Pooling/config.json), e.g. all-MiniLM-L6-v2", file.display())]
pub struct ModelError {
    /// The file at fault.
    pub file: PathBuf,
    /// What is wrong with it.
    pub what: String,
}

fn bad(file: &Path, what: impl Into<String>) -> ModelError {
    ModelError {
        file: file.to_path_buf(),
        what: what.into(),
    }
}

/// The whole numbers a safetensors header entry lists under `key` (`shape`, `data_offsets`);
/// empty when there is no such list, and entries that are not whole numbers left out.
fn usizes(tensor: &serde_json::Value, key: &str) -> Vec<usize> {
    tensor
        .get(key)
        .and_then(|s| s.as_array())
        .map(|s| {
            s.iter()
                .filter_map(|d| d.as_u64().map(|d| d as usize))
                .collect()
        })
        .unwrap_or_default()
}

#[derive(Deserialize)]
struct Config {
    #[serde(default)]
    model_type: Option<String>,
    hidden_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    intermediate_size: usize,
    max_position_embeddings: usize,
    #[serde(default = "two")]
    type_vocab_size: usize,
    vocab_size: usize,
    #[serde(default = "eps")]
    layer_norm_eps: f32,
    #[serde(default = "gelu")]
    hidden_act: String,
}
fn two() -> usize {
    2
}
fn eps() -> f32 {
    1e-12
}
fn gelu() -> String {
    "gelu".into()
}

#[derive(Deserialize)]
struct PoolingConfig {
    word_embedding_dimension: usize,
    #[serde(default)]
    pooling_mode_cls_token: bool,
    #[serde(default)]
    pooling_mode_mean_tokens: bool,
    #[serde(default)]
    pooling_mode_max_tokens: bool,
    #[serde(default)]
    pooling_mode_mean_sqrt_len_tokens: bool,
}

/// How token vectors become the text's vector (`1_Pooling/config.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pooling {
    /// The mean of all tokens.
    Mean,
    /// The first token's (`[CLS]`).
    Cls,
    /// The largest value of each dimension.
    Max,
    /// The sum divided by the square root of the token count.
    MeanSqrtLen,
}

/// The WordPiece tokenizer of a BERT `tokenizer.json` (BertNormalizer, BertPreTokenizer).
#[derive(Debug)]
struct WordPiece {
    vocab: HashMap<String, u32>,
    unk: u32,
    cls: u32,
    sep: u32,
    prefix: String,
    max_word_chars: usize,
    lowercase: bool,
    strip_accents: bool,
    chinese: bool,
    clean: bool,
}

#[derive(Deserialize)]
struct TokenizerFile {
    normalizer: Option<Normalizer>,
    pre_tokenizer: Option<serde_json::Value>,
    model: TokenizerModel,
}
#[derive(Deserialize)]
struct Normalizer {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default = "yes")]
    clean_text: bool,
    #[serde(default = "yes")]
    handle_chinese_chars: bool,
    #[serde(default)]
    strip_accents: Option<bool>,
    #[serde(default = "yes")]
    lowercase: bool,
}
fn yes() -> bool {
    true
}
#[derive(Deserialize)]
struct TokenizerModel {
    #[serde(rename = "type")]
    kind: String,
    vocab: HashMap<String, u32>,
    #[serde(default = "unk")]
    unk_token: String,
    #[serde(default = "hashes")]
    continuing_subword_prefix: String,
    #[serde(default = "hundred")]
    max_input_chars_per_word: usize,
}
fn unk() -> String {
    "[UNK]".into()
}
fn hashes() -> String {
    "##".into()
}
fn hundred() -> usize {
    100
}

impl WordPiece {
    fn load(file: &Path) -> Result<WordPiece, ModelError> {
        let t: TokenizerFile = serde_json::from_slice(&read_json(file)?)
            .map_err(|e| bad(file, format!("not a tokenizer file: {e}")))?;
        if t.model.kind != "WordPiece" {
            return Err(bad(
                file,
                format!(
                    "a {} tokenizer; only BERT's WordPiece is supported",
                    t.model.kind
                ),
            ));
        }
        let n = t.normalizer.as_ref();
        if let Some(n) = n.filter(|n| n.kind != "BertNormalizer") {
            return Err(bad(
                file,
                format!("normalizer {} (BertNormalizer expected)", n.kind),
            ));
        }
        let pre = t
            .pre_tokenizer
            .as_ref()
            .and_then(|p| p.get("type")?.as_str().map(String::from));
        if pre.as_deref().is_some_and(|p| p != "BertPreTokenizer") {
            return Err(bad(file, "a pre-tokenizer other than BertPreTokenizer"));
        }
        let id = |tok: &str| {
            t.model
                .vocab
                .get(tok)
                .copied()
                .ok_or_else(|| bad(file, format!("no {tok} in the vocabulary")))
        };
        let lowercase = n.is_none_or(|n| n.lowercase);
        Ok(WordPiece {
            unk: id(&t.model.unk_token)?,
            cls: id("[CLS]")?,
            sep: id("[SEP]")?,
            prefix: t.model.continuing_subword_prefix.clone(),
            max_word_chars: t.model.max_input_chars_per_word,
            lowercase,
            strip_accents: n.and_then(|n| n.strip_accents).unwrap_or(lowercase),
            chinese: n.is_none_or(|n| n.handle_chinese_chars),
            clean: n.is_none_or(|n| n.clean_text),
            vocab: t.model.vocab,
        })
    }

    /// The ids of `text`: `[CLS]`, at most `max - 2` word pieces, `[SEP]`.
    fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        let mut ids = vec![self.cls];
        let budget = max.saturating_sub(2);
        'words: for word in self.words(text) {
            for id in self.pieces(&word) {
                if ids.len() > budget {
                    break 'words;
                }
                ids.push(id);
            }
        }
        ids.push(self.sep);
        ids
    }

    /// The normalised words and punctuation marks of `text`.
    fn words(&self, text: &str) -> Vec<String> {
        let mut clean = String::with_capacity(text.len());
        for c in text.chars() {
            if self.clean && (c == '\0' || c == '\u{fffd}' || is_control(c)) {
                continue;
            }
            if self.clean && is_whitespace(c) {
                clean.push(' ');
            } else if self.chinese && is_cjk(c) {
                clean.extend([' ', c, ' ']);
            } else {
                clean.push(c);
            }
        }
        let mut text = clean;
        if self.strip_accents {
            text = text
                .nfd()
                .filter(|c| !unicode_normalization::char::is_combining_mark(*c))
                .collect();
        }
        if self.lowercase {
            text = text.to_lowercase();
        }
        let mut out = Vec::new();
        let mut word = String::new();
        for c in text.chars() {
            if is_whitespace(c) {
                out.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            } else if is_punctuation(c) {
                out.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
                out.push(c.to_string());
            } else {
                word.push(c);
            }
        }
        out.extend((!word.is_empty()).then_some(word));
        out
    }

    /// Greedy longest-first word pieces of `word` (`[UNK]` when one part has none).
    fn pieces(&self, word: &str) -> Vec<u32> {
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        if chars.len() > self.max_word_chars {
            return vec![self.unk];
        }
        let mut out = Vec::new();
        let mut start = 0;
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while end > start {
                let from = chars[start].0;
                let to = chars.get(end).map_or(word.len(), |c| c.0);
                let piece = match start {
                    0 => word[from..to].to_string(),
                    _ => format!("{}{}", self.prefix, &word[from..to]),
                };
                if let Some(id) = self.vocab.get(&piece) {
                    found = Some(*id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => out.push(id),
                None => return vec![self.unk],
            }
            start = end;
        }
        out
    }
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Control characters (Unicode Cc and the common format characters), tabs and newlines not.
fn is_control(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    c.is_control()
        || matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// ASCII punctuation and symbols, and Unicode punctuation in the blocks help text uses.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation()
        || matches!(c, '\u{a1}' | '\u{a7}' | '\u{ab}' | '\u{b6}' | '\u{b7}' | '\u{bb}' | '\u{bf}'
            | '\u{2010}'..='\u{2027}' | '\u{2030}'..='\u{205e}' | '\u{3001}'..='\u{3003}'
            | '\u{3008}'..='\u{3011}' | '\u{ff01}'..='\u{ff0f}')
}

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

fn read_json(file: &Path) -> Result<Vec<u8>, ModelError> {
    let meta = std::fs::metadata(file).map_err(|e| bad(file, format!("missing ({e})")))?;
    if meta.len() > MAX_JSON_BYTES {
        return Err(bad(file, format!("larger than {MAX_JSON_BYTES} bytes")));
    }
    std::fs::read(file).map_err(|e| bad(file, format!("unreadable ({e})")))
}

/// A dense layer, its weights kept as (inputs × outputs) in row-major order: the matrix
/// product packs them for its kernel from contiguous rows (from the file's transposed
/// layout that packing was a fifth of the time).
struct Linear {
    w: Array2<f32>,
    b: Array1<f32>,
}

impl Linear {
    fn apply(&self, x: ArrayView2<f32>) -> Array2<f32> {
        let mut y = x.dot(&self.w);
        y += &self.b;
        y
    }

    /// Layers of the same input side by side: one product gives all their outputs.
    fn joined(file: &Path, parts: &[Linear]) -> Result<Linear, ModelError> {
        let ws: Vec<_> = parts.iter().map(|p| p.w.view()).collect();
        let bs: Vec<_> = parts.iter().map(|p| p.b.view()).collect();
        let stack = |e: ndarray::ShapeError| bad(file, format!("layers that do not stack ({e})"));
        Ok(Linear {
            w: ndarray::concatenate(Axis(1), &ws).map_err(stack)?,
            b: ndarray::concatenate(Axis(0), &bs).map_err(stack)?,
        })
    }
}

struct Norm {
    g: Array1<f32>,
    b: Array1<f32>,
}

struct Layer {
    qkv: Linear,
    attn_out: Linear,
    attn_norm: Norm,
    up: Linear,
    down: Linear,
    out_norm: Norm,
}

/// A loaded sentence-transformers BERT model.
pub struct SentenceModel {
    name: String,
    tokenizer: WordPiece,
    words: Array2<f32>,
    positions: Array2<f32>,
    token_type: Array1<f32>,
    emb_norm: Norm,
    layers: Vec<Layer>,
    heads: usize,
    eps: f32,
    pooling: Pooling,
    normalize: bool,
    max_tokens: usize,
}

impl std::fmt::Debug for SentenceModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceModel")
            .field("name", &self.name)
            .field("layers", &self.layers.len())
            .field("dim", &self.dim())
            .field("pooling", &self.pooling)
            .finish()
    }
}

/// The tensors of a safetensors file (F32 only), checked against the file's length.
struct Tensors {
    file: PathBuf,
    data: Vec<u8>,
    start: usize,
    header: HashMap<String, serde_json::Value>,
    prefix: &'static str,
}

impl Tensors {
    fn load(file: &Path) -> Result<Tensors, ModelError> {
        let meta = std::fs::metadata(file).map_err(|e| bad(file, format!("missing ({e})")))?;
        if meta.len() > MAX_WEIGHTS_BYTES {
            return Err(bad(file, format!("larger than {MAX_WEIGHTS_BYTES} bytes")));
        }
        let data = std::fs::read(file).map_err(|e| bad(file, format!("unreadable ({e})")))?;
        let truncated = || bad(file, "truncated: shorter than its header says");
        let n = data.get(..8).ok_or_else(truncated)?;
        let n = u64::from_le_bytes([n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]]);
        let start = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_add(8))
            .filter(|s| *s <= data.len())
            .ok_or_else(truncated)?;
        let header: HashMap<String, serde_json::Value> = serde_json::from_slice(&data[8..start])
            .map_err(|e| bad(file, format!("not a safetensors file (its header: {e})")))?;
        let prefix = match header.contains_key("bert.embeddings.word_embeddings.weight") {
            true => "bert.",
            false => "",
        };
        Ok(Tensors {
            file: file.to_path_buf(),
            data,
            start,
            header,
            prefix,
        })
    }

    /// The tensor `name` as numbers, checked to have `shape`.
    fn get(&self, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
        let full = format!("{}{name}", self.prefix);
        let t = self
            .header
            .get(&full)
            .ok_or_else(|| bad(&self.file, format!("no tensor {full}")))?;
        let dtype = t.get("dtype").and_then(|d| d.as_str()).unwrap_or("?");
        if dtype != "F32" {
            return Err(bad(
                &self.file,
                format!("{full} is {dtype}; only F32 weights are read"),
            ));
        }
        let got = usizes(t, "shape");
        if got != shape {
            return Err(bad(
                &self.file,
                format!("{full} has shape {got:?}, config.json says {shape:?}"),
            ));
        }
        let offsets = usizes(t, "data_offsets");
        let [from, to] = offsets[..] else {
            return Err(bad(&self.file, format!("{full} has no data_offsets")));
        };
        let count: usize = shape.iter().product();
        if to < from || to - from != count * 4 {
            return Err(bad(
                &self.file,
                format!("{full}: its offsets do not fit its shape"),
            ));
        }
        let bytes = self
            .start
            .checked_add(to)
            .and_then(|end| self.data.get(self.start + from..end))
            .ok_or_else(|| {
                bad(
                    &self.file,
                    format!(
                        "truncated: {full} ends at byte {} of a {}-byte file",
                        self.start + to,
                        self.data.len()
                    ),
                )
            })?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn matrix(&self, name: &str, rows: usize, cols: usize) -> Result<Array2<f32>, ModelError> {
        let v = self.get(name, &[rows, cols])?;
        Array2::from_shape_vec((rows, cols), v).map_err(|e| bad(&self.file, e.to_string()))
    }

    fn vector(&self, name: &str, len: usize) -> Result<Array1<f32>, ModelError> {
        Ok(Array1::from(self.get(name, &[len])?))
    }

    fn linear(&self, name: &str, out: usize, inp: usize) -> Result<Linear, ModelError> {
        Ok(Linear {
            w: self
                .matrix(&format!("{name}.weight"), out, inp)?
                .reversed_axes()
                .as_standard_layout()
                .into_owned(),
            b: self.vector(&format!("{name}.bias"), out)?,
        })
    }

    fn norm(&self, name: &str, len: usize) -> Result<Norm, ModelError> {
        Ok(Norm {
            g: self.vector(&format!("{name}.weight"), len)?,
            b: self.vector(&format!("{name}.bias"), len)?,
        })
    }
}

impl SentenceModel {
    /// Load the model in `dir` (every file checked: a missing or malformed one is named in
    /// the error).
    pub fn load(dir: &Path) -> Result<SentenceModel, ModelError> {
        if !dir.is_dir() {
            return Err(bad(dir, "not a folder"));
        }
        let c = read_config(&dir.join("config.json"))?;
        let h = c.hidden_size;
        let pooling = read_pooling(&dir.join("1_Pooling").join("config.json"), h)?;
        // modules.json lists a Normalize module when vectors are normalised; without it the
        // vectors are still compared by cosine, so normalising changes no ranking.
        let modules = dir.join("modules.json");
        let normalize = match std::fs::metadata(&modules) {
            Ok(_) => String::from_utf8_lossy(&read_json(&modules)?).contains("Normalize"),
            Err(_) => true,
        };
        let max_seq = dir.join("sentence_bert_config.json");
        let max_tokens = std::fs::read(&max_seq)
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| v.get("max_seq_length")?.as_u64())
            .map_or(c.max_position_embeddings, |m| m as usize)
            .clamp(3, c.max_position_embeddings);
        let tokenizer = WordPiece::load(&dir.join("tokenizer.json"))?;
        if let Some(big) = tokenizer
            .vocab
            .values()
            .find(|id| **id as usize >= c.vocab_size)
        {
            return Err(bad(
                &dir.join("tokenizer.json"),
                format!(
                    "token id {big} but config.json's vocab_size is {}",
                    c.vocab_size
                ),
            ));
        }
        let t = Tensors::load(&dir.join("model.safetensors"))?;
        let type_vectors = t.matrix(
            "embeddings.token_type_embeddings.weight",
            c.type_vocab_size,
            h,
        )?;
        let layers = (0..c.num_hidden_layers)
            .map(|i| read_layer(&t, i, h, c.intermediate_size))
            .collect::<Result<Vec<_>, _>>()?;
        let name = dir
            .file_name()
            .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
        Ok(SentenceModel {
            name,
            words: t.matrix("embeddings.word_embeddings.weight", c.vocab_size, h)?,
            positions: t.matrix(
                "embeddings.position_embeddings.weight",
                c.max_position_embeddings,
                h,
            )?,
            token_type: type_vectors.row(0).to_owned(),
            emb_norm: t.norm("embeddings.LayerNorm", h)?,
            layers,
            heads: c.num_attention_heads,
            eps: c.layer_norm_eps,
            pooling,
            normalize,
            max_tokens,
            tokenizer,
        })
    }

    /// The folder's name (stored with each vector, so vectors of two models are never
    /// compared).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The length of its vectors.
    pub fn dim(&self) -> usize {
        self.emb_norm.g.len()
    }

    /// The most tokens one text is cut to (the model's `max_seq_length`).
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The token ids of `text` as the model sees them (`[CLS]` … `[SEP]`), at most
    /// `max_tokens` (and the model's own limit).
    pub fn tokens(&self, text: &str, max_tokens: usize) -> Vec<u32> {
        self.tokenizer
            .encode(text, max_tokens.clamp(3, self.max_tokens))
    }

    /// The vector of `text`, cut to at most `max_tokens` tokens.
    pub fn embed(&self, text: &str, max_tokens: usize) -> Vec<f32> {
        self.embed_ids(&self.tokens(text, max_tokens))
    }

    /// The vector of token ids (as [`SentenceModel::tokens`] gives them).
    pub fn embed_ids(&self, ids: &[u32]) -> Vec<f32> {
        self.embed_many(&[ids]).pop().unwrap_or_default()
    }

    /// The vectors of several token-id lists, in order: the same numbers as one at a time,
    /// in less time. Every linear layer runs once over all tokens of all texts (one large
    /// matrix product instead of one per text: the weights are packed for the kernel once,
    /// not once per text, which cost a short text more than its arithmetic); only attention
    /// runs text by text. No text is padded.
    pub fn embed_many<T: AsRef<[u32]>>(&self, texts: &[T]) -> Vec<Vec<f32>> {
        let h = self.dim();
        // each text's rows in the stacked matrix
        let mut spans = Vec::with_capacity(texts.len());
        let mut rows = 0;
        for t in texts {
            let n = t.as_ref().len().min(self.positions.nrows());
            spans.push(rows..rows + n);
            rows += n;
        }
        let mut x = Array2::<f32>::zeros((rows, h));
        for (t, span) in texts.iter().zip(&spans) {
            for (i, id) in t.as_ref().iter().take(span.len()).enumerate() {
                let mut row = x.row_mut(span.start + i);
                row.assign(&self.words.row(*id as usize));
                row += &self.positions.row(i);
                row += &self.token_type;
            }
        }
        self.layer_norm(&mut x, &self.emb_norm);
        let d = h / self.heads;
        let scale = 1.0 / (d as f32).sqrt();
        for l in &self.layers {
            // queries, keys and values in one product: columns [q | k | v]
            let qkv = l.qkv.apply(x.view());
            let mut ctx = Array2::<f32>::zeros((rows, h));
            for span in &spans {
                let part = Slice::from(span.clone());
                let qkv = qkv.slice_axis(Axis(0), part);
                for head in 0..self.heads {
                    // the macro `s!` allows unsafe code inside, which the workspace forbids
                    let cols = |at: usize| Slice::from(at + head * d..at + (head + 1) * d);
                    let mut scores = qkv
                        .slice_axis(Axis(1), cols(0))
                        .dot(&qkv.slice_axis(Axis(1), cols(h)).t());
                    for mut row in scores.axis_iter_mut(Axis(0)) {
                        let max = row.fold(f32::NEG_INFINITY, |m, v| m.max(*v));
                        row.mapv_inplace(|v| ((v - max) * scale).exp());
                        let sum = row.sum();
                        row /= sum;
                    }
                    ctx.slice_axis_mut(Axis(0), part)
                        .slice_axis_mut(Axis(1), cols(0))
                        .assign(&scores.dot(&qkv.slice_axis(Axis(1), cols(2 * h))));
                }
            }
            let mut y = l.attn_out.apply(ctx.view());
            y += &x;
            self.layer_norm(&mut y, &l.attn_norm);
            let mut up = l.up.apply(y.view());
            up.mapv_inplace(gelu_erf);
            let mut z = l.down.apply(up.view());
            z += &y;
            self.layer_norm(&mut z, &l.out_norm);
            x = z;
        }
        spans
            .into_iter()
            .map(|span| self.pool(x.slice_axis(Axis(0), Slice::from(span))))
            .collect()
    }

    /// One text's vector from its token vectors.
    fn pool(&self, x: ArrayView2<f32>) -> Vec<f32> {
        let n = x.nrows();
        let mut pooled: Vec<f32> = match self.pooling {
            Pooling::Mean => x.mean_axis(Axis(0)).map_or_else(Vec::new, |m| m.to_vec()),
            Pooling::Cls => x.row(0).to_vec(),
            Pooling::Max => x
                .axis_iter(Axis(1))
                .map(|c| c.fold(f32::NEG_INFINITY, |m, v| m.max(*v)))
                .collect(),
            Pooling::MeanSqrtLen => (x.sum_axis(Axis(0)) / (n as f32).sqrt()).to_vec(),
        };
        if self.normalize {
            let norm = pooled.iter().map(|v| v * v).sum::<f32>().sqrt().max(1e-12);
            pooled.iter_mut().for_each(|v| *v /= norm);
        }
        pooled
    }

    fn layer_norm(&self, x: &mut Array2<f32>, n: &Norm) {
        for mut row in x.axis_iter_mut(Axis(0)) {
            let len = row.len() as f32;
            let mean = row.sum() / len;
            let var = row.fold(0.0, |a, v| a + (v - mean) * (v - mean)) / len;
            let inv = 1.0 / (var + self.eps).sqrt();
            row.mapv_inplace(|v| (v - mean) * inv);
            row *= &n.g;
            row += &n.b;
        }
    }
}

/// `config.json`, checked: a BERT encoder of sizes this code runs.
fn read_config(config_file: &Path) -> Result<Config, ModelError> {
    let c: Config = serde_json::from_slice(&read_json(config_file)?)
        .map_err(|e| bad(config_file, format!("not a BERT config: {e}")))?;
    if c.model_type.as_deref().is_some_and(|t| t != "bert") {
        return Err(bad(config_file, "model_type is not bert"));
    }
    if c.hidden_act != "gelu" {
        return Err(bad(
            config_file,
            format!("hidden_act {} (gelu expected)", c.hidden_act),
        ));
    }
    let h = c.hidden_size;
    if h == 0
        || h > 8_192
        || c.num_attention_heads == 0
        || !h.is_multiple_of(c.num_attention_heads)
        || c.num_hidden_layers > 64
        || c.intermediate_size > 65_536
        || c.max_position_embeddings < 3
        || c.type_vocab_size == 0
    {
        return Err(bad(
            config_file,
            "sizes out of range (hidden_size, heads, layers)",
        ));
    }
    Ok(c)
}

/// `1_Pooling/config.json`: one pooling mode, of vectors as long as the model's.
fn read_pooling(pooling_file: &Path, h: usize) -> Result<Pooling, ModelError> {
    let p: PoolingConfig = serde_json::from_slice(&read_json(pooling_file)?)
        .map_err(|e| bad(pooling_file, format!("not a pooling config: {e}")))?;
    let pooling = match (
        p.pooling_mode_mean_tokens,
        p.pooling_mode_cls_token,
        p.pooling_mode_max_tokens,
        p.pooling_mode_mean_sqrt_len_tokens,
    ) {
        (true, false, false, false) => Pooling::Mean,
        (false, true, false, false) => Pooling::Cls,
        (false, false, true, false) => Pooling::Max,
        (false, false, false, true) => Pooling::MeanSqrtLen,
        _ => return Err(bad(pooling_file, "exactly one pooling mode must be on")),
    };
    if p.word_embedding_dimension != h {
        return Err(bad(
            pooling_file,
            format!(
                "word_embedding_dimension {} but hidden_size {h}",
                p.word_embedding_dimension
            ),
        ));
    }
    Ok(pooling)
}

/// Encoder layer `i` of the weights.
fn read_layer(t: &Tensors, i: usize, h: usize, inter: usize) -> Result<Layer, ModelError> {
    let l = format!("encoder.layer.{i}");
    Ok(Layer {
        qkv: Linear::joined(
            &t.file,
            &[
                t.linear(&format!("{l}.attention.self.query"), h, h)?,
                t.linear(&format!("{l}.attention.self.key"), h, h)?,
                t.linear(&format!("{l}.attention.self.value"), h, h)?,
            ],
        )?,
        attn_out: t.linear(&format!("{l}.attention.output.dense"), h, h)?,
        attn_norm: t.norm(&format!("{l}.attention.output.LayerNorm"), h)?,
        up: t.linear(&format!("{l}.intermediate.dense"), inter, h)?,
        down: t.linear(&format!("{l}.output.dense"), h, inter)?,
        out_norm: t.norm(&format!("{l}.output.LayerNorm"), h)?,
    })
}

/// GELU with the error function (BERT's `gelu`), erf after Abramowitz and Stegun 7.1.26
/// (error below 1.5e-7).
/// In f32: the f64 version took a tenth of the encoder's time, for differences below 1e-6.
fn gelu_erf(x: f32) -> f32 {
    let z = x * std::f32::consts::FRAC_1_SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z.abs());
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152 + t * 1.061_405_4))));
    let erf = (1.0 - poly * (-z * z).exp()).copysign(z);
    0.5 * x * (1.0 + erf)
}

/// The model folder the tests and the benchmark use: `UFO_EMBED_MODEL_DIR` (scripts/test.sh
/// installs the model and sets it). Without it a test skips, saying so, unless
/// `UFO_EMBED_TESTS=1` (the suite), where the missing model is a failure.
pub fn test_model_dir(test: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("UFO_EMBED_MODEL_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from);
    if dir.is_none() {
        assert!(
            std::env::var("UFO_EMBED_TESTS").as_deref() != Ok("1"),
            "UFO_EMBED_TESTS=1 but UFO_EMBED_MODEL_DIR is not set: run scripts/test-deps.sh install_embed_model"
        );
        eprintln!("skipping {test}: set UFO_EMBED_MODEL_DIR to an all-MiniLM-L6-v2 folder (scripts/test-deps.sh install_embed_model)");
    }
    dir
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_list_reads_its_whole_numbers_and_nothing_when_missing() {
        let t = serde_json::json!({"shape": [384, 2, -1, "x"], "data_offsets": 7});
        assert_eq!(usizes(&t, "shape"), vec![384, 2]);
        assert_eq!(
            usizes(&t, "data_offsets"),
            Vec::<usize>::new(),
            "not a list"
        );
        assert_eq!(usizes(&t, "dtype"), Vec::<usize>::new(), "missing");
    }

    /// all-MiniLM-L6-v2's model, once per test binary (loading reads 91 MB).
    fn model() -> Option<&'static SentenceModel> {
        static MODEL: std::sync::OnceLock<Option<SentenceModel>> = std::sync::OnceLock::new();
        MODEL
            .get_or_init(|| {
                let dir = test_model_dir("model tests")?;
                Some(SentenceModel::load(&dir).expect("the test model loads"))
            })
            .as_ref()
    }

    /// Token ids and the first numbers of the vectors as the reference gives them: the
    /// tokenizer of the `tokenizers` package with this tokenizer.json, and the same weights
    /// run through BERT in numpy (float64), mean pooled and normalised.
    const REFERENCE: [(&str, &[u32], [f32; 8]); 3] = [
        (
            "Freeze the first row of the spreadsheet",
            &[
                101, 13184, 1996, 2034, 5216, 1997, 1996, 20861, 21030, 2102, 102,
            ],
            [
                -0.040984, 0.026138, -0.058337, 0.00768, -0.027555, 0.045632, -0.084415, 0.016398,
            ],
        ),
        (
            "Crème brûlée: Ünïcode, CJK 中文 and punctuation—dashes! (x2) e-mail@host.org",
            &[
                101, 13675, 21382, 7987, 9307, 2063, 1024, 27260, 1010, 1039, 15992, 1746, 1861,
                1998, 26136, 6593, 14505, 1517, 11454, 2229, 999, 1006, 1060, 2475, 1007, 1041,
                1011, 5653, 1030, 3677, 1012, 8917, 102,
            ],
            [
                -0.029516, 0.050895, 0.087865, -0.011493, -0.06075, -0.019955, 0.063768, 0.003279,
            ],
        ),
        (
            "make the white around the photo see-through",
            &[
                101, 2191, 1996, 2317, 2105, 1996, 6302, 2156, 1011, 2083, 102,
            ],
            [
                -0.025361, 0.11662, 0.002999, 0.079722, 0.095382, -0.026098, 0.048027, -0.045641,
            ],
        ),
    ];

    #[test]
    fn tokens_and_vectors_match_the_reference() {
        let Some(m) = model() else { return };
        assert_eq!(m.dim(), 384);
        assert_eq!(m.max_tokens(), 256);
        for (text, ids, start) in REFERENCE {
            assert_eq!(m.tokens(text, 256), ids, "{text}");
            let v = m.embed(text, 256);
            assert_eq!(v.len(), 384);
            let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "{text}: norm {norm}");
            for (i, (got, want)) in v.iter().zip(start).enumerate() {
                assert!((got - want).abs() < 2e-4, "{text}: [{i}] {got} vs {want}");
            }
        }
    }

    #[test]
    fn a_batch_gives_each_text_the_vector_it_gets_alone() {
        let Some(m) = model() else { return };
        let long = "Select the cells, then choose Format - Cells - Borders. ".repeat(20);
        let texts: Vec<Vec<u32>> = REFERENCE
            .iter()
            .map(|(text, _, _)| m.tokens(text, 256))
            .chain([m.tokens(&long, 128), m.tokens("", 128), m.tokens("a", 128)])
            .collect();
        let batch = m.embed_many(&texts);
        assert_eq!(batch.len(), texts.len());
        for (ids, got) in texts.iter().zip(&batch) {
            let alone = m.embed_ids(ids);
            let worst = alone
                .iter()
                .zip(got)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(worst < 1e-5, "{} tokens: off by {worst}", ids.len());
        }
        // and the reference's numbers from inside a batch
        for ((_, _, start), got) in REFERENCE.iter().zip(&batch) {
            for (want, got) in start.iter().zip(got) {
                assert!((want - got).abs() < 2e-4, "{got} vs {want}");
            }
        }
        assert!(m.embed_many::<Vec<u32>>(&[]).is_empty());
    }

    #[test]
    fn meaning_is_closer_than_words() {
        let Some(m) = model() else { return };
        // the reference gives 0.563 and 0.226
        let goal = m.embed("keep the header row visible while I scroll down", 64);
        let page = m.embed("Freezing Rows or Columns as Headers", 64);
        let other = m.embed("Inserting Rows and Columns", 64);
        let cos = |a: &[f32], b: &[f32]| crate::embed::cosine(a, b);
        assert!(
            (cos(&goal, &page) - 0.563).abs() < 1e-3,
            "{}",
            cos(&goal, &page)
        );
        assert!(
            (cos(&goal, &other) - 0.226).abs() < 1e-3,
            "{}",
            cos(&goal, &other)
        );
    }

    #[test]
    fn long_texts_are_cut_to_the_budget() {
        let Some(m) = model() else { return };
        let long = "spreadsheet ".repeat(1_000);
        assert_eq!(m.tokens(&long, 128).len(), 128);
        assert_eq!(m.tokens(&long, 100_000).len(), 256);
        assert_eq!(m.embed(&long, 128).len(), 384);
        assert_eq!(m.tokens("", 128), [101, 102]);
    }

    /// A copy of the test model's folder with `change` applied to it.
    fn broken(change: impl FnOnce(&Path)) -> Option<(tempfile::TempDir, PathBuf)> {
        let from = test_model_dir("broken model folders")?;
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("model");
        std::fs::create_dir_all(dir.join("1_Pooling")).expect("mkdir");
        for f in [
            "config.json",
            "tokenizer.json",
            "model.safetensors",
            "1_Pooling/config.json",
        ] {
            std::fs::copy(from.join(f), dir.join(f)).expect("copy");
        }
        change(&dir);
        Some((tmp, dir))
    }

    fn error_of(dir: &Path) -> String {
        SentenceModel::load(dir)
            .expect_err("a bad folder")
            .to_string()
    }

    #[test]
    fn a_missing_file_is_named() {
        for f in [
            "config.json",
            "tokenizer.json",
            "model.safetensors",
            "1_Pooling/config.json",
        ] {
            let Some((_tmp, dir)) = broken(|d| std::fs::remove_file(d.join(f)).expect("rm")) else {
                return;
            };
            let e = error_of(&dir);
            assert!(e.contains(&dir.join(f).display().to_string()), "{e}");
            assert!(e.contains("missing"), "{e}");
        }
    }

    #[test]
    fn a_truncated_safetensors_is_named() {
        let Some((_tmp, dir)) = broken(|d| {
            let f = d.join("model.safetensors");
            let len = std::fs::metadata(&f).expect("meta").len();
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&f)
                .expect("open");
            file.set_len(len / 2).expect("truncate");
        }) else {
            return;
        };
        let e = error_of(&dir);
        assert!(e.contains("model.safetensors"), "{e}");
        assert!(e.contains("truncated"), "{e}");
        // and one cut inside its header
        let f = dir.join("model.safetensors");
        std::fs::write(&f, [0x10, 0x27, 0, 0, 0, 0, 0, 0, b'{']).expect("write");
        let e = error_of(&dir);
        assert!(
            e.contains("model.safetensors") && e.contains("truncated"),
            "{e}"
        );
    }

    #[test]
    fn wrong_shapes_are_named() {
        // a config whose sizes do not fit the weights
        let Some((_tmp, dir)) = broken(|d| {
            let f = d.join("config.json");
            let c = std::fs::read_to_string(&f).expect("read");
            std::fs::write(
                &f,
                c.replace("\"intermediate_size\": 1536", "\"intermediate_size\": 1024"),
            )
            .expect("write");
        }) else {
            return;
        };
        let e = error_of(&dir);
        assert!(e.contains("model.safetensors"), "{e}");
        assert!(
            e.contains("intermediate.dense.weight has shape [1536, 384]"),
            "{e}"
        );
        assert!(e.contains("[1024, 384]"), "{e}");
        // and a pooling config of another width
        let Some((_tmp, dir)) = broken(|d| {
            let f = d.join("1_Pooling/config.json");
            let c = std::fs::read_to_string(&f).expect("read");
            std::fs::write(&f, c.replace("384", "768")).expect("write");
        }) else {
            return;
        };
        let e = error_of(&dir);
        assert!(e.contains("1_Pooling") && e.contains("768"), "{e}");
    }

    #[test]
    fn not_a_folder_and_not_json_are_named() {
        let e = SentenceModel::load(Path::new("/nonexistent/model")).expect_err("no folder");
        assert!(
            e.to_string().contains("/nonexistent/model: not a folder"),
            "{e}"
        );
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::write(tmp.path().join("config.json"), "{ nope").expect("write");
        let e = error_of(tmp.path()).to_string();
        assert!(e.contains("config.json: not a BERT config"), "{e}");
    }

    #[test]
    fn gelu_matches_known_values() {
        for (x, want) in [
            (0.0f32, 0.0f32),
            (1.0, 0.841_344_7),
            (-1.0, -0.158_655_3),
            (3.0, 2.995_95),
        ] {
            assert!((gelu_erf(x) - want).abs() < 1e-5, "{x}: {}", gelu_erf(x));
        }
    }
}
