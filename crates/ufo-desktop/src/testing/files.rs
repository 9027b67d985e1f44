//! Documents the live tests open, written by hand so that no tool is needed to make them.

use std::path::Path;

/// Write a PDF of `pages` pages at `path`, each saying "Page N" in Helvetica (Okular's and
/// other viewers' tests open it).
///
/// # Errors
/// When the file cannot be written.
pub fn write_pdf(path: &Path, pages: usize) -> std::io::Result<()> {
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", 3 + 2 * i)).collect();
    let mut objs = vec![
        "<< /Type /Catalog /Pages 2 0 R >>".to_string(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            kids.join(" ")
        ),
    ];
    let font = 3 + 2 * pages;
    for i in 0..pages {
        objs.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {} 0 R \
             /Resources << /Font << /F1 {font} 0 R >> >> >>",
            4 + 2 * i
        ));
        let text = format!("BT /F1 36 Tf 72 700 Td (Page {}) Tj ET", i + 1);
        objs.push(format!(
            "<< /Length {} >>\nstream\n{text}\nendstream",
            text.len()
        ));
    }
    objs.push("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>".into());
    let mut out = String::from("%PDF-1.4\n");
    let mut offsets = Vec::new();
    for (i, o) in objs.iter().enumerate() {
        offsets.push(out.len());
        out.push_str(&format!("{} 0 obj\n{o}\nendobj\n", i + 1));
    }
    let xref = out.len();
    out.push_str(&format!(
        "xref\n0 {}\n0000000000 65535 f \n",
        objs.len() + 1
    ));
    for o in offsets {
        out.push_str(&format!("{o:010} 00000 n \n"));
    }
    out.push_str(&format!(
        "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
        objs.len() + 1
    ));
    std::fs::write(path, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The PDF's cross-reference table points at each object's start, as viewers check.
    #[test]
    fn the_pdf_cross_references_point_at_its_objects() {
        let path = std::env::temp_dir().join(format!("ufo-pdf-{}.pdf", std::process::id()));
        write_pdf(&path, 3).expect("written");
        let text = std::fs::read_to_string(&path).expect("read");
        let _ = std::fs::remove_file(&path);
        assert!(text.starts_with("%PDF-1.4") && text.contains("/Count 3"));
        let xref = text.find("xref\n").expect("xref");
        let offsets: Vec<usize> = text[xref..]
            .lines()
            .skip(3)
            .take_while(|l| l.ends_with(" n "))
            .map(|l| l[..10].parse().expect("offset"))
            .collect();
        assert_eq!(offsets.len(), 9);
        for (i, o) in offsets.iter().enumerate() {
            assert!(text[*o..].starts_with(&format!("{} 0 obj", i + 1)));
        }
    }
}
