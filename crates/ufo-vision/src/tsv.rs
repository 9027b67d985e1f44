//! The one parser of Tesseract's TSV output (docs/sight.md). Tesseract writes one row per
//! page, block, paragraph, line and word: `level page_num block_num par_num line_num word_num
//! left top width height conf text`. Only word rows (level 5) with text and a confidence are
//! kept; any row that does not read (short, non-numeric, negative size) is skipped, never an
//! error, so a changed or broken output loses only its own rows.

use ufo_core::vision::DetectedWord;
use ufo_core::Rect;

/// The most words one output yields: bounds the memory of a pathological image and the
/// grouping's time (quadratic in the words; a full 1280×800 window holds a few hundred).
pub const MAX_WORDS: usize = 5_000;

/// A word row: the word and the line it is on.
#[derive(Debug, Clone, PartialEq)]
pub struct TsvWord {
    /// Block, paragraph and line numbers: words of one key are one Tesseract line.
    pub line: (u32, u32, u32),
    /// The word, its box divided by `scale` and moved by `offset`.
    pub word: DetectedWord,
}

/// The words of `tsv`, read from an image scaled `scale` times whose (0, 0) lies at `offset`:
/// boxes come back in the unscaled image's pixels (left and top rounded down, right and
/// bottom up), confidences from 0–100 to 0–1.
pub fn parse_tsv(tsv: &str, scale: u32, offset: (i32, i32)) -> Vec<TsvWord> {
    let scale = i64::from(scale.max(1));
    tsv.lines()
        .filter_map(|row| word_row(row.trim_end_matches('\r'), scale, offset))
        .take(MAX_WORDS)
        .collect()
}

fn word_row(row: &str, scale: i64, offset: (i32, i32)) -> Option<TsvWord> {
    let f: Vec<&str> = row.splitn(12, '\t').collect();
    if f.len() < 12 || f[0].trim() != "5" {
        return None;
    }
    let num = |i: usize| f[i].trim().parse::<i64>().ok();
    let (left, top, width, height) = (num(6)?, num(7)?, num(8)?, num(9)?);
    let conf = f[10].trim().parse::<f32>().ok().filter(|c| c.is_finite())?;
    let text = f[11].trim();
    if text.is_empty() || conf < 0.0 || width < 0 || height < 0 {
        return None;
    }
    let x0 = left.div_euclid(scale) + i64::from(offset.0);
    let y0 = top.div_euclid(scale) + i64::from(offset.1);
    let x1 = (left + width + scale - 1).div_euclid(scale) + i64::from(offset.0);
    let y1 = (top + height + scale - 1).div_euclid(scale) + i64::from(offset.1);
    let small = |v: i64| i32::try_from(v).ok();
    let size = |v: i64| u32::try_from(v).ok();
    Some(TsvWord {
        line: (
            u32::try_from(num(2)?).ok()?,
            u32::try_from(num(3)?).ok()?,
            u32::try_from(num(4)?).ok()?,
        ),
        word: DetectedWord {
            text: text.to_string(),
            rect: Rect::new(small(x0)?, small(y0)?, size(x1 - x0)?, size(y1 - y0)?),
            confidence: (conf / 100.0).clamp(0.0, 1.0),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SAMPLE: &str = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n\
        1\t1\t0\t0\t0\t0\t0\t0\t1280\t800\t-1\t\n\
        4\t1\t1\t1\t1\t0\t20\t10\t200\t24\t-1\t\n\
        5\t1\t1\t1\t1\t1\t20\t10\t81\t24\t96.5\tFile\r\n\
        5\t1\t1\t1\t1\t2\t121\t10\t80\t25\t91.0\tEdit\n\
        5\t1\t1\t1\t1\t3\t300\t10\t8\t24\t95.0\t \n\
        5\t1\t2\t1\t1\t1\tx\t10\t8\t24\t95.0\tbroken\n\
        5\t1\t2\t1\t1\t1\t10\t10\t8\n";

    #[test]
    fn word_rows_are_read_scaled_back_and_offset() {
        let got = parse_tsv(SAMPLE, 2, (100, 50));
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].word.text, "File");
        // left 20/2 = 10, right (20+81)/2 rounded up = 51: width 41.
        assert_eq!(got[0].word.rect, Rect::new(110, 55, 41, 12));
        assert!((got[0].word.confidence - 0.965).abs() < 1e-6);
        assert_eq!(got[1].line, (1, 1, 1));
        assert_eq!(got[1].word.rect, Rect::new(160, 55, 41, 13));
    }

    fn row() -> impl Strategy<Value = (u32, u32, u32, u32, u32, u8, String)> {
        (
            0u32..5,
            0u32..5000,
            0u32..5000,
            1u32..500,
            1u32..200,
            0u8..=100,
            "[A-Za-z0-9&.:]{1,12}",
        )
    }

    proptest! {
        #[test]
        fn any_text_parses_without_panic(s in "(5\t|[0-9]{1,12}\t|-[0-9]\t|[a-z .]{0,5}\t?|\r?\n|\\PC{0,3}){0,80}") {
            let got = parse_tsv(&s, 2, (0, 0));
            prop_assert!(got.len() <= MAX_WORDS);
        }

        #[test]
        fn written_word_rows_read_back(rows in prop::collection::vec(row(), 0..20), crlf in any::<bool>()) {
            let end = if crlf { "\r\n" } else { "\n" };
            let mut tsv = String::from("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext");
            tsv.push_str(end);
            for (line, x, y, w, h, conf, text) in &rows {
                tsv.push_str(&format!("5\t1\t1\t1\t{line}\t1\t{x}\t{y}\t{w}\t{h}\t{conf}\t{text}{end}"));
                tsv.push_str(&format!("4\t1\t1\t1\t{line}\t0\t{x}\t{y}\t{w}\t{h}\t-1\t{end}"));
            }
            let got = parse_tsv(&tsv, 1, (0, 0));
            prop_assert_eq!(got.len(), rows.len());
            for (g, (line, x, y, w, h, conf, text)) in got.iter().zip(&rows) {
                prop_assert_eq!(&g.word.text, text);
                prop_assert_eq!(g.word.rect, Rect::new(*x as i32, *y as i32, *w, *h));
                prop_assert_eq!(g.line, (1, 1, *line));
                prop_assert!((g.word.confidence - f32::from(*conf) / 100.0).abs() < 1e-6);
            }
        }
    }
}
