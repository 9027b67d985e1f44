//! Discovery and indexing of the help installed on the machine: LibreOffice's HTML help,
//! GIMP's, GNOME's Mallard pages and section-1 man pages; and of a person's own documents.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use ufo_core::knowledge::KnowledgeKind;

use crate::apps::{libreoffice_module_apps, tag_of};
use crate::extract::{self, Format, Page, MAX_FILE_BYTES};
use crate::store::{Document, Store, StoreError};

/// Documents saved per transaction while indexing (short enough that other writers wait
/// little).
const BATCH: usize = 250;
/// Most files one source may contribute (a bound on a runaway directory).
const MAX_FILES_PER_SOURCE: usize = 50_000;
/// Most directory levels walked under a root.
const MAX_WALK_DEPTH: usize = 12;

/// The help sources ufo knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// LibreOffice's HTML help.
    LibreOffice,
    /// GIMP's HTML help.
    Gimp,
    /// GNOME's Mallard help.
    Mallard,
    /// Section-1 man pages.
    Man,
}

impl Source {
    /// Every source, in indexing order.
    pub const ALL: [Source; 4] = [
        Source::LibreOffice,
        Source::Gimp,
        Source::Mallard,
        Source::Man,
    ];

    /// The source's name (also stored with each of its documents).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::LibreOffice => "libreoffice",
            Source::Gimp => "gimp",
            Source::Mallard => "mallard",
            Source::Man => "man",
        }
    }

    /// The source named `s`.
    pub fn parse(s: &str) -> Option<Source> {
        Source::ALL.into_iter().find(|x| x.as_str() == s)
    }
}

/// Where the installed help lives (the defaults are Debian's; tests point elsewhere).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpRoots {
    /// LibreOffice: `<root>/<lang>/text/<module>/...html`.
    pub libreoffice: PathBuf,
    /// GIMP: `<root>/<lang>/*.html`.
    pub gimp: PathBuf,
    /// Mallard: `<root>/<lang>/<app>/*.page`.
    pub mallard: PathBuf,
    /// Man page directories (each with `man1/`).
    pub man: Vec<PathBuf>,
    /// Languages in order of preference (`en-US`, `en`, `C` are always tried last).
    pub languages: Vec<String>,
}

impl HelpRoots {
    /// The system's places, languages from `LANGUAGE`/`LC_ALL`/`LANG`, man directories from
    /// `MANPATH` or the usual ones.
    pub fn system() -> HelpRoots {
        let mut languages = Vec::new();
        for var in ["LANGUAGE", "LC_ALL", "LANG"] {
            if let Ok(v) = std::env::var(var) {
                for l in v.split(':') {
                    let l = l.split('.').next().unwrap_or("");
                    if !l.is_empty() && l != "C" && l != "POSIX" {
                        languages.push(l.replace('_', "-"));
                        if let Some((lang, _)) = l.split_once('_') {
                            languages.push(lang.to_string());
                        }
                    }
                }
            }
        }
        let man = match std::env::var("MANPATH") {
            Ok(v) if !v.is_empty() => v
                .split(':')
                .filter(|p| !p.is_empty())
                .map(PathBuf::from)
                .collect(),
            _ => vec![
                PathBuf::from("/usr/share/man"),
                PathBuf::from("/usr/local/share/man"),
            ],
        };
        HelpRoots {
            libreoffice: PathBuf::from("/usr/share/libreoffice/help"),
            gimp: PathBuf::from("/usr/share/gimp/2.0/help"),
            mallard: PathBuf::from("/usr/share/help"),
            man,
            languages,
        }
    }

    /// The first language directory under `root` in order of preference.
    fn language_dir(&self, root: &Path) -> Option<PathBuf> {
        let fallback = ["en-US", "en_US", "en", "C"];
        self.languages
            .iter()
            .map(String::as_str)
            .chain(fallback)
            .flat_map(|l| [l.to_string(), l.replace('-', "_")])
            .map(|l| root.join(l))
            .find(|d| d.is_dir())
    }
}

/// One file to index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpFile {
    /// The file.
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// Its source.
    pub source: Source,
    /// The applications it serves.
    pub apps: Vec<String>,
}

/// The help files installed for `sources`, with the applications each serves.
pub fn installed_help(roots: &HelpRoots, sources: &[Source]) -> Vec<HelpFile> {
    let mut out = Vec::new();
    for source in sources {
        match source {
            Source::LibreOffice => libreoffice_files(roots, &mut out),
            Source::Gimp => gimp_files(roots, &mut out),
            Source::Mallard => mallard_files(roots, &mut out),
            Source::Man => man_files(roots, &mut out),
        }
    }
    out
}

/// LibreOffice: `text/<module>/**.html`, apps from the module.
fn libreoffice_files(roots: &HelpRoots, out: &mut Vec<HelpFile>) {
    let Some(lang) = roots.language_dir(&roots.libreoffice) else {
        return;
    };
    let Ok(modules) = std::fs::read_dir(lang.join("text")) else {
        return;
    };
    let mut modules: Vec<PathBuf> = modules
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    modules.sort();
    for module in modules {
        let name = module
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        let apps: Vec<String> = libreoffice_module_apps(&name)
            .iter()
            .map(|s| s.to_string())
            .collect();
        for path in walk(&module, |p| Format::of_path(p) == Some(Format::Html)) {
            out.push(HelpFile {
                path,
                format: Format::Html,
                source: Source::LibreOffice,
                apps: apps.clone(),
            });
        }
    }
}

/// GIMP: every page of the language directory.
fn gimp_files(roots: &HelpRoots, out: &mut Vec<HelpFile>) {
    let Some(lang) = roots.language_dir(&roots.gimp) else {
        return;
    };
    for path in walk(&lang, |p| Format::of_path(p) == Some(Format::Html)) {
        out.push(HelpFile {
            path,
            format: Format::Html,
            source: Source::Gimp,
            apps: vec!["gimp".into()],
        });
    }
}

/// Mallard: `<lang>/<app>/*.page`, apps from the directory name (licences left out).
fn mallard_files(roots: &HelpRoots, out: &mut Vec<HelpFile>) {
    let Some(lang) = roots.language_dir(&roots.mallard) else {
        return;
    };
    let Ok(apps) = std::fs::read_dir(&lang) else {
        return;
    };
    let mut apps: Vec<PathBuf> = apps
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    apps.sort();
    for dir in apps {
        let name = dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        if matches!(name.as_str(), "gpl" | "lgpl" | "fdl") {
            continue;
        }
        let Some(tag) = tag_of(&name) else { continue };
        for path in walk(&dir, |p| Format::of_path(p) == Some(Format::Mallard)) {
            out.push(HelpFile {
                path,
                format: Format::Mallard,
                source: Source::Mallard,
                apps: vec![tag.clone()],
            });
        }
    }
}

/// Man pages: `man1/*` of each man directory, aliases (symbolic links) left out.
fn man_files(roots: &HelpRoots, out: &mut Vec<HelpFile>) {
    for dir in &roots.man {
        let Ok(entries) = std::fs::read_dir(dir.join("man1")) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
            .map(|e| e.path())
            .filter(|p| Format::of_path(p) == Some(Format::Man))
            .take(MAX_FILES_PER_SOURCE)
            .collect();
        paths.sort();
        for path in paths {
            out.push(HelpFile {
                path,
                format: Format::Man,
                source: Source::Man,
                apps: vec!["terminal".into()],
            });
        }
    }
}

/// Files under `root` that `keep` accepts (bounded in depth and count; links not followed).
fn walk(root: &Path, keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(t) = e.file_type() else { continue };
            let p = e.path();
            if t.is_dir() && depth < MAX_WALK_DEPTH {
                dirs.push((p, depth + 1));
            } else if t.is_file() && keep(&p) && out.len() < MAX_FILES_PER_SOURCE {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The first [`MAX_FILE_BYTES`] of a file, decompressed if it ends in `.gz`, as text (bad
/// UTF-8 replaced).
pub fn read_bounded(path: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(file)
            .take(MAX_FILE_BYTES)
            .read_to_end(&mut bytes)?;
    } else {
        file.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// A file's name without its extensions, for a page with no title.
fn stem(path: &Path) -> String {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.split('.').next().unwrap_or(name).to_string()
}

/// GIMP's index (`gimp-help-index.html`): for each page file name, its index entries
/// ("Animation, Optimize").
pub fn gimp_index(text: &str) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    let Ok(dom) = tl::parse(text, tl::ParserOptions::default()) else {
        return map;
    };
    let parser = dom.parser();
    enum Step {
        Enter(tl::NodeHandle, usize),
        LeaveDl,
    }
    let mut terms: Vec<String> = Vec::new();
    let mut dl_depth = 0usize;
    let mut stack: Vec<Step> = dom
        .children()
        .iter()
        .rev()
        .map(|h| Step::Enter(*h, 0))
        .collect();
    while let Some(step) = stack.pop() {
        let (h, depth) = match step {
            Step::Enter(h, d) => (h, d),
            Step::LeaveDl => {
                dl_depth = dl_depth.saturating_sub(1);
                continue;
            }
        };
        let Some(tl::Node::Tag(tag)) = h.get(parser) else {
            continue;
        };
        if depth > 64 {
            continue;
        }
        let name = tag.name().as_utf8_str().to_ascii_lowercase();
        if name == "dt" {
            let children = tag.children();
            let kids = children.top().as_slice();
            let term = kids
                .iter()
                .find_map(|k| match k.get(parser) {
                    Some(tl::Node::Raw(r)) => Some(extract::decode_entities(&r.as_utf8_str())),
                    _ => None,
                })
                .unwrap_or_default();
            let term = extract::collapse(term.trim().trim_end_matches(','));
            terms.truncate(dl_depth.saturating_sub(1));
            terms.push(term);
            let full = terms
                .iter()
                .filter(|t| !t.is_empty())
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            for k in kids {
                if let Some(tl::Node::Tag(a)) = k.get(parser) {
                    if let Some(Some(href)) = a.attributes().get("href") {
                        let href = href.as_utf8_str();
                        let page = href.split('#').next().unwrap_or("").to_string();
                        let entry = map.entry(page).or_default();
                        if entry.len() < 64 && !entry.contains(&full) {
                            entry.push(full.clone());
                        }
                    }
                }
            }
            continue;
        }
        if name == "dl" {
            dl_depth += 1;
            stack.push(Step::LeaveDl);
        }
        for c in tag.children().top().as_slice().iter().rev() {
            stack.push(Step::Enter(*c, depth + 1));
        }
    }
    map
}

/// What indexing did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct IndexReport {
    /// Documents saved.
    pub saved: usize,
    /// Files that could not be read (left out).
    pub unreadable: usize,
}

/// Extract and save `files` in batches, calling `progress(done, total)` as it goes.
pub fn index_files(
    store: &mut Store,
    files: &[HelpFile],
    progress: &mut dyn FnMut(usize, usize),
) -> Result<IndexReport, StoreError> {
    let mut report = IndexReport::default();
    let mut gimp_keywords: HashMap<PathBuf, HashMap<String, Vec<String>>> = HashMap::new();
    let mut batch = Vec::with_capacity(BATCH);
    for (i, f) in files.iter().enumerate() {
        match read_bounded(&f.path) {
            Ok(text) => {
                let mut page = extract::extract(f.format, &text, &stem(&f.path));
                if f.source == Source::Gimp {
                    add_gimp_keywords(&mut gimp_keywords, &f.path, &mut page);
                }
                batch.push(Document {
                    kind: KnowledgeKind::Docs,
                    location: f.path.display().to_string(),
                    source: f.source.as_str().to_string(),
                    apps: f.apps.clone(),
                    page,
                });
            }
            Err(_) => report.unreadable += 1,
        }
        if batch.len() >= BATCH {
            report.saved += store.save(&batch)?;
            batch.clear();
        }
        progress(i + 1, files.len());
    }
    report.saved += store.save(&batch)?;
    Ok(report)
}

/// A GIMP page's entries of its directory's index, added to its keywords.
fn add_gimp_keywords(
    cache: &mut HashMap<PathBuf, HashMap<String, Vec<String>>>,
    path: &Path,
    page: &mut Page,
) {
    let Some(dir) = path.parent() else { return };
    let index = cache.entry(dir.to_path_buf()).or_insert_with(|| {
        read_bounded(&dir.join("gimp-help-index.html"))
            .map(|t| gimp_index(&t))
            .unwrap_or_default()
    });
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if let Some(entries) = index.get(name) {
        if !page.keywords.is_empty() {
            page.keywords.push('\n');
        }
        page.keywords.push_str(&entries.join("\n"));
        page.keywords = extract::clip(&page.keywords, extract::MAX_FIELD_CHARS);
    }
}

/// A person's documents as read by [`user_documents`]: those to store, and the files left
/// out with why.
#[derive(Debug, Default)]
pub struct UserDocuments {
    /// The documents, in file order.
    pub docs: Vec<Document>,
    /// Each file that gave none because it cannot be read or is not what its name says (a
    /// `.json` that is not guidance records), with the reason.
    pub skipped: Vec<(PathBuf, String)>,
}

/// A person's own documents under `path` (a file or a directory): HTML, Markdown, text, and
/// JSON guidance records, each serving `app`. A file that cannot be read or parsed is skipped
/// with its reason, the others kept; only a `path` that is not there or an `app` that is no
/// application name is an error.
pub fn user_documents(path: &Path, app: &str) -> Result<UserDocuments, String> {
    let files = if path.is_dir() {
        walk(path, |p| Format::of_path(p).is_some() || is_json(p))
    } else if path.is_file() {
        vec![path.to_path_buf()]
    } else {
        return Err(format!(
            "{} is neither a file nor a directory",
            path.display()
        ));
    };
    let app_tag =
        crate::apps::app_tag(app).ok_or_else(|| format!("{app:?} is not an application name"))?;
    let mut out = UserDocuments::default();
    for f in files {
        match file_documents(&f, &app_tag) {
            Ok(docs) => out.docs.extend(docs),
            Err(why) => out.skipped.push((f, why)),
        }
    }
    Ok(out)
}

/// The documents of one of a person's files, or why it gives none.
fn file_documents(f: &Path, app_tag: &str) -> Result<Vec<Document>, String> {
    let text = read_bounded(f).map_err(|e| format!("cannot be read: {e}"))?;
    let location = std::fs::canonicalize(f)
        .unwrap_or(f.to_path_buf())
        .display()
        .to_string();
    let doc = |location: String, apps: Vec<String>, page: Page| Document {
        kind: KnowledgeKind::Docs,
        location,
        source: "user".into(),
        apps,
        page,
    };
    if !is_json(f) {
        let format = Format::of_path(f).unwrap_or(Format::Text);
        let page = extract::extract(format, &text, &stem(f));
        return Ok(vec![doc(location, vec![app_tag.to_string()], page)]);
    }
    let records = extract::guidance(&text)
        .map_err(|e| format!("not guidance records {{application, request, guidance[]}}: {e}"))?;
    Ok(records
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let mut apps = vec![app_tag.to_string()];
            if let Some(t) = crate::apps::app_tag(&g.application).filter(|t| t != app_tag) {
                apps.push(t);
            }
            doc(format!("{location}#{i}"), apps, g.page())
        })
        .collect())
}

fn is_json(p: &Path) -> bool {
    p.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json") || e.eq_ignore_ascii_case("jsonl"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gimp_index_maps_pages_to_nested_entries() {
        let html = r#"<dl><dt>Alpha channel, <a class="indexterm" href="glossary.html">Glossary</a></dt>
            <dt>Animation</dt><dd><dl>
              <dt>Optimize, <a href="plug-in-optimize.html#x">Optimize</a></dt>
            </dl></dd>
            <dt>Zoom, <a href="view-zoom.html">Zoom</a></dt></dl>"#;
        let m = gimp_index(html);
        assert_eq!(m["glossary.html"], ["Alpha channel"]);
        assert_eq!(m["plug-in-optimize.html"], ["Animation, Optimize"]);
        assert_eq!(m["view-zoom.html"], ["Zoom"]);
    }

    #[test]
    fn discovery_finds_each_source_with_its_apps() {
        let d = tempfile::tempdir().unwrap();
        let w = |p: &str, s: &str| {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, s).unwrap();
        };
        w("lo/en-US/text/scalc/guide/a.html", "<title>A</title>");
        w("lo/en-US/text/shared/01/b.html", "<title>B</title>");
        w("lo/en-US/text/scalc/guide/c.png", "");
        w("gimp/en/g.html", "<title>G</title>");
        w(
            "help/C/gnome-calculator/p.page",
            "<page><title>P</title></page>",
        );
        w("help/C/gpl/index.page", "<page/>");
        w("man/man1/ls.1", ".TH LS 1");
        let roots = HelpRoots {
            libreoffice: d.path().join("lo"),
            gimp: d.path().join("gimp"),
            mallard: d.path().join("help"),
            man: vec![d.path().join("man")],
            languages: vec!["de".into()],
        };
        let files = installed_help(&roots, &Source::ALL);
        let got: Vec<(String, Vec<String>)> = files
            .iter()
            .map(|f| {
                (
                    f.path.strip_prefix(d.path()).unwrap().display().to_string(),
                    f.apps.clone(),
                )
            })
            .collect();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            got,
            vec![
                (
                    "lo/en-US/text/scalc/guide/a.html".into(),
                    s(&["calc", "libreoffice"])
                ),
                (
                    "lo/en-US/text/shared/01/b.html".into(),
                    s(&["calc", "writer", "impress", "draw", "libreoffice"])
                ),
                ("gimp/en/g.html".into(), s(&["gimp"])),
                (
                    "help/C/gnome-calculator/p.page".into(),
                    s(&["gnomecalculator"])
                ),
                ("man/man1/ls.1".into(), s(&["terminal"])),
            ]
        );
        let mut store = Store::open(&d.path().join("k.sqlite")).unwrap();
        let mut calls = 0;
        let r = index_files(&mut store, &files, &mut |_, _| calls += 1).unwrap();
        assert_eq!(r.saved, 5);
        assert_eq!(calls, 5);
    }

    #[test]
    fn user_documents_read_pages_and_guidance() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.md"), "# Totals\nUse SUM.").unwrap();
        std::fs::write(
            d.path().join("g.json"),
            r#"{"application":"EXCEL.EXE","request":"Sum a column","guidance":["Select","AutoSum"]}"#,
        )
        .unwrap();
        std::fs::write(d.path().join("x.bin"), "no").unwrap();
        let read = user_documents(d.path(), "libreoffice-calc").unwrap();
        assert!(read.skipped.is_empty(), "{:?}", read.skipped);
        let docs = read.docs;
        assert_eq!(docs.len(), 2);
        assert!(docs
            .iter()
            .all(|d| d.apps[0] == "calc" && d.source == "user"));
        assert!(docs.iter().any(|d| d.page.title == "Totals"));
        assert!(docs
            .iter()
            .any(|d| d.location.ends_with("g.json#0") && d.page.title == "Sum a column"));
        assert!(user_documents(&d.path().join("missing"), "calc").is_err());
    }

    #[test]
    fn a_bad_file_is_skipped_with_why_and_the_others_kept() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.md"), "# Totals\nUse SUM.").unwrap();
        std::fs::write(d.path().join("bad.json"), "{ not json").unwrap();
        std::fs::write(
            d.path().join("g.jsonl"),
            "{\"application\":\"calc\",\"request\":\"Sum\",\"guidance\":[\"AutoSum\"]}\n",
        )
        .unwrap();
        std::fs::write(d.path().join("wrong.json"), r#"{"title": "no guidance"}"#).unwrap();
        let read = user_documents(d.path(), "libreoffice-calc").unwrap();
        let titles: Vec<&str> = read.docs.iter().map(|d| d.page.title.as_str()).collect();
        assert_eq!(titles, ["Totals", "Sum"]);
        let skipped: Vec<String> = read
            .skipped
            .iter()
            .map(|(p, why)| format!("{}: {why}", p.file_name().unwrap().to_string_lossy()))
            .collect();
        assert_eq!(skipped.len(), 2, "{skipped:?}");
        assert!(
            skipped[0].starts_with("bad.json: not guidance records"),
            "{skipped:?}"
        );
        assert!(
            skipped[1].starts_with("wrong.json: not guidance records"),
            "{skipped:?}"
        );
        // one bad file given alone: skipped, not an error
        let alone = user_documents(&d.path().join("bad.json"), "libreoffice-calc").unwrap();
        assert!(alone.docs.is_empty());
        assert_eq!(alone.skipped.len(), 1);
    }
}
