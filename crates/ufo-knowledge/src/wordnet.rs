//! WordNet's synonyms of a request's words, read from the database files Debian's
//! `wordnet-base` installs (`/usr/share/wordnet`: `index.noun`, `index.verb`, `index.adj`
//! and their `data.*`; `UFO_WORDNET_DIR` names another folder). Without them a search
//! expands nothing.
//!
//! The format: each `index.POS` holds one line per lemma, sorted bytewise (`lemma pos
//! synset_cnt p_cnt [ptr...] sense_cnt tagsense_cnt offset...`, the synsets' offsets most
//! frequent sense first); `data.POS` holds a synset at each offset (`offset lex_filenum
//! ss_type w_cnt word lex_id [word lex_id...] ...`, `w_cnt` in hexadecimal). Inflected
//! forms are reduced to their lemma as WordNet's own `morphy` does: the `POS.exc` lists of
//! irregular forms, then its suffix rules.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Where Debian's `wordnet-base` installs the database.
pub const SYSTEM_DIR: &str = "/usr/share/wordnet";

/// Most bytes of one synset's line read from a `data.*` file (the longest are under 16 KiB;
/// the words come first, so a cut line still gives them).
const MAX_SYNSET_BYTES: usize = 4_096;

/// A part of speech WordNet has a file pair for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pos {
    Noun,
    Verb,
    Adj,
}

impl Pos {
    const ALL: [Pos; 3] = [Pos::Verb, Pos::Noun, Pos::Adj];

    fn file(self) -> &'static str {
        match self {
            Pos::Noun => "noun",
            Pos::Verb => "verb",
            Pos::Adj => "adj",
        }
    }

    /// WordNet's `morphy` suffix rules: an inflected ending and what replaces it.
    fn rules(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Pos::Noun => &[
                ("s", ""),
                ("ses", "s"),
                ("xes", "x"),
                ("zes", "z"),
                ("ches", "ch"),
                ("shes", "sh"),
                ("men", "man"),
                ("ies", "y"),
            ],
            Pos::Verb => &[
                ("s", ""),
                ("ies", "y"),
                ("es", "e"),
                ("es", ""),
                ("ed", "e"),
                ("ed", ""),
                ("ing", "e"),
                ("ing", ""),
            ],
            Pos::Adj => &[("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
        }
    }
}

/// One part of speech's files: its index in memory, its data file open.
struct PosFiles {
    index: Vec<u8>,
    data: File,
    exceptions: HashMap<String, String>,
}

/// The WordNet database of a folder.
pub struct WordNet {
    files: Vec<(Pos, PosFiles)>,
}

/// Why the database could not be read.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the WordNet file {path}: {source}; install wordnet-base or set UFO_WORDNET_DIR to a folder holding index.noun, data.noun, ...")]
pub struct WordNetError {
    path: String,
    source: std::io::Error,
}

impl std::fmt::Debug for WordNet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WordNet").finish_non_exhaustive()
    }
}

impl WordNet {
    /// The database in `dir` (every `index.*` and `data.*` of nouns, verbs and adjectives must
    /// be there; the `*.exc` lists are optional).
    pub fn open(dir: &Path) -> Result<WordNet, WordNetError> {
        let mut files = Vec::new();
        for pos in Pos::ALL {
            let path = |kind: &str| dir.join(format!("{kind}.{}", pos.file()));
            let err = |p: PathBuf| {
                move |source| WordNetError {
                    path: p.display().to_string(),
                    source,
                }
            };
            let index = std::fs::read(path("index")).map_err(err(path("index")))?;
            let data = File::open(path("data")).map_err(err(path("data")))?;
            let exceptions = std::fs::read_to_string(dir.join(format!("{}.exc", pos.file())))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| {
                    let mut w = l.split(' ');
                    Some((w.next()?.to_string(), w.next()?.to_string()))
                })
                .collect();
            files.push((
                pos,
                PosFiles {
                    index,
                    data,
                    exceptions,
                },
            ));
        }
        Ok(WordNet { files })
    }

    /// The database at `UFO_WORDNET_DIR` or [`SYSTEM_DIR`], `None` when it is not there.
    pub fn system() -> Option<WordNet> {
        let dir = std::env::var_os("UFO_WORDNET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(SYSTEM_DIR));
        WordNet::open(&dir).ok()
    }

    /// Whether `word` is most often a verb: its verb senses are the most often seen in
    /// WordNet's tagged texts of its parts of speech.
    pub fn mostly_verb(&self, word: &str) -> bool {
        let tagged = |want: Pos| {
            self.files
                .iter()
                .filter(|(p, _)| *p == want)
                .filter_map(|(p, f)| Some(f.tagged(&f.lemma(*p, word)?)))
                .next()
                .unwrap_or(0)
        };
        let base = self
            .files
            .iter()
            .any(|(p, f)| *p == Pos::Verb && f.line(word).is_some());
        let verb = tagged(Pos::Verb);
        base && verb > 0 && verb >= tagged(Pos::Noun) && verb >= tagged(Pos::Adj)
    }

    /// Other words for `word` (lowercase): the words of its `senses` most frequent senses as
    /// a noun, a verb and an adjective, most frequent first, at most `most`; a multi-word
    /// lemma comes with spaces ("take away").
    pub fn synonyms(&self, word: &str, senses: usize, most: usize) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        // each part of speech's lemma and its senses seen in WordNet's tagged texts
        let found: Vec<(&PosFiles, String, usize)> = self
            .files
            .iter()
            .filter_map(|(pos, f)| {
                let lemma = f.lemma(*pos, word)?;
                let tagged = f.tagged(&lemma);
                Some((f, lemma, tagged))
            })
            .collect();
        let dominant = std::env::var_os("UFO_WN_DOMINANT").is_some();
        let most_tagged = found.iter().map(|(_, _, t)| *t).max().unwrap_or(0);
        for (f, lemma, tagged) in &found {
            let mut senses = senses;
            if dominant {
                if *tagged < most_tagged || *tagged == 0 {
                    continue;
                }
                senses = senses.min(*tagged);
            }
            for offset in f.offsets(lemma).into_iter().take(senses) {
                for w in f.synset_words(offset) {
                    let w = w.replace('_', " ").to_lowercase();
                    if w != word && w != *lemma && !out.contains(&w) {
                        out.push(w);
                    }
                }
            }
        }
        out.truncate(most);
        out
    }
}

impl PosFiles {
    /// The index line of `lemma`, if any (binary search over the sorted lines).
    fn line(&self, lemma: &str) -> Option<&[u8]> {
        let key = lemma.replace(' ', "_");
        let key = key.as_bytes();
        let idx = &self.index;
        let (mut lo, mut hi) = (0usize, idx.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // the line holding `mid`
            let start = idx[..mid]
                .iter()
                .rposition(|b| *b == b'\n')
                .map_or(0, |i| i + 1);
            let end = idx[mid..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(idx.len(), |i| mid + i);
            let line = &idx[start..end];
            let word = line.split(|b| *b == b' ').next().unwrap_or(&[]);
            // the licence's lines begin with a space: before every lemma
            let order = if line.first() == Some(&b' ') {
                std::cmp::Ordering::Less
            } else {
                word.cmp(key)
            };
            match order {
                std::cmp::Ordering::Equal => return Some(line),
                std::cmp::Ordering::Less => lo = end + 1,
                std::cmp::Ordering::Greater => hi = start,
            }
        }
        None
    }

    /// `word`'s lemma in this part of speech (itself, its irregular form's, or by a suffix
    /// rule), if WordNet has it.
    fn lemma(&self, pos: Pos, word: &str) -> Option<String> {
        if self.line(word).is_some() {
            return Some(word.to_string());
        }
        if let Some(base) = self.exceptions.get(word) {
            if self.line(base).is_some() {
                return Some(base.clone());
            }
        }
        pos.rules().iter().find_map(|(end, with)| {
            let stem = word.strip_suffix(end)?;
            let base = format!("{stem}{with}");
            (!stem.is_empty() && self.line(&base).is_some()).then_some(base)
        })
    }

    /// How many of `lemma`'s senses WordNet's tagged texts have (its `tagsense_cnt`).
    fn tagged(&self, lemma: &str) -> usize {
        let Some(line) = self.line(lemma) else {
            return 0;
        };
        let text = String::from_utf8_lossy(line);
        let fields: Vec<&str> = text.split_whitespace().collect();
        let p_cnt = fields.get(3).and_then(|p| p.parse::<usize>().ok()).unwrap_or(0);
        fields
            .get(4 + p_cnt + 1)
            .and_then(|t| t.parse().ok())
            .unwrap_or(0)
    }

    /// The synsets' offsets of `lemma`, most frequent sense first.
    fn offsets(&self, lemma: &str) -> Vec<u64> {
        let Some(line) = self.line(lemma) else {
            return vec![];
        };
        let text = String::from_utf8_lossy(line);
        let fields: Vec<&str> = text.split_whitespace().collect();
        // lemma pos synset_cnt p_cnt [ptr * p_cnt] sense_cnt tagsense_cnt offsets...
        let Some(p_cnt) = fields.get(3).and_then(|p| p.parse::<usize>().ok()) else {
            return vec![];
        };
        fields
            .iter()
            .skip(4 + p_cnt + 2)
            .filter_map(|o| o.parse().ok())
            .collect()
    }

    /// The words of the synset at `offset`.
    fn synset_words(&self, offset: u64) -> Vec<String> {
        let mut buf = vec![0u8; MAX_SYNSET_BYTES];
        let Ok(n) = self.data.read_at(&mut buf, offset) else {
            return vec![];
        };
        buf.truncate(n);
        let end = buf.iter().position(|b| *b == b'\n').unwrap_or(buf.len());
        let text = String::from_utf8_lossy(&buf[..end]);
        let fields: Vec<&str> = text.split(' ').collect();
        // offset lex_filenum ss_type w_cnt (hex) word lex_id ...
        let Some(count) = fields.get(3).and_then(|c| usize::from_str_radix(c, 16).ok()) else {
            return vec![];
        };
        (0..count)
            .filter_map(|i| fields.get(4 + 2 * i))
            // an adjective's position marker: "galore(ip)"
            .map(|w| w.split('(').next().unwrap_or(w).to_string())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database of three synsets written as WordNet's files are.
    fn tiny() -> (tempfile::TempDir, WordNet) {
        let dir = tempfile::tempdir().unwrap();
        let data_verb = "00000000 00 v 02 remove 0 take_away 0 000 | gloss\n";
        let second = data_verb.len();
        let data_verb = format!("{data_verb}{second:08} 00 v 01 withdraw 0 000 | gloss\n");
        std::fs::write(dir.path().join("data.verb"), &data_verb).unwrap();
        std::fs::write(
            dir.path().join("index.verb"),
            format!(
                "  1 licence line\nremove v 2 0 2 1 00000000 {second:08}  \nzap v 1 0 1 0 {second:08}  \n"
            ),
        )
        .unwrap();
        std::fs::write(dir.path().join("verb.exc"), "removed remove\n").unwrap();
        let adj = "00000000 00 s 02 capital 0 uppercase(a) 0 000 | gloss\n";
        std::fs::write(dir.path().join("data.adj"), adj).unwrap();
        std::fs::write(
            dir.path().join("index.adj"),
            "capital a 1 0 1 0 00000000  \nuppercase a 1 0 1 0 00000000  \n",
        )
        .unwrap();
        std::fs::write(dir.path().join("data.noun"), "").unwrap();
        std::fs::write(dir.path().join("index.noun"), "").unwrap();
        let wn = WordNet::open(dir.path()).unwrap();
        (dir, wn)
    }

    #[test]
    fn synonyms_come_from_the_most_frequent_senses_and_lemmas() {
        let (_d, wn) = tiny();
        assert_eq!(wn.synonyms("remove", 1, 5), ["take away"]);
        assert_eq!(wn.synonyms("remove", 2, 5), ["take away", "withdraw"]);
        assert_eq!(wn.synonyms("remove", 2, 1), ["take away"]);
        // an irregular form and a suffix rule
        assert_eq!(wn.synonyms("removed", 1, 5), ["take away"]);
        assert_eq!(wn.synonyms("removes", 1, 5), ["take away"]);
        assert_eq!(wn.synonyms("uppercase", 1, 5), ["capital"]);
        assert_eq!(wn.synonyms("capital", 1, 5), ["uppercase"]);
        assert!(wn.synonyms("unknown", 3, 5).is_empty());
        assert!(wn.synonyms("aaa", 3, 5).is_empty());
        assert!(wn.synonyms("zzzz", 3, 5).is_empty());
    }

    #[test]
    fn a_missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let e = WordNet::open(dir.path()).err().unwrap().to_string();
        assert!(e.contains("index.verb") && e.contains("wordnet-base"), "{e}");
    }
}
