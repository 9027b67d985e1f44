//! The documentation names only files that exist: every path a README, ARCHITECTURE.md or a
//! page of `docs/` gives in backquotes or as a link — `crates/ufo/src/cli/mod.rs`,
//! `observe/loading.rs`, `settle.rs`, `(docs/serve.md)` — is a file or folder of the
//! repository, found from the repository's root, from the document's folder, or, for a path
//! written inside a crate (`commands/run.rs`), as the end of a path under `crates/`. What
//! names a file a session makes or a person's own (`<out>/events.jsonl`,
//! `~/.config/ufo/ufo.toml`, `/tmp/...`, `$XDG_DATA_HOME/...`) is not a repository path and is
//! left alone, as are URLs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace")
}

/// Every file and folder of the repository (relative, `/`-separated), but build output and
/// version control.
fn repository_paths(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if matches!(name.as_str(), "target" | ".git" | "node_modules") {
                continue;
            }
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .expect("under the root")
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel);
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(path);
            }
        }
    }
    out
}

/// The documents: the READMEs, ARCHITECTURE.md and docs/*.md.
fn documents(root: &Path, paths: &BTreeSet<String>) -> Vec<PathBuf> {
    paths
        .iter()
        .filter(|p| {
            p.ends_with("README.md")
                || p.as_str() == "ARCHITECTURE.md"
                || (p.starts_with("docs/") && p.ends_with(".md"))
        })
        .filter(|p| !p.starts_with("fuzz/") || p.as_str() == "fuzz/README.md")
        .map(|p| root.join(p))
        .collect()
}

/// Extensions of files a document may name as the repository's.
const SOURCE: &[&str] = &[
    "rs", "md", "sh", "py", "toml", "json", "jsonl", "html", "js", "css", "yaml", "yml", "sbatch",
    "png", "desktop",
];

/// The candidate paths of a document: backquoted words and link targets that look like a
/// repository path.
fn named_paths(text: &str, roots: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    // fenced blocks whole, and `code` spans (which never cross a line here)
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        let code: Vec<&str> = if fenced {
            vec![line]
        } else {
            line.split('`').skip(1).step_by(2).collect()
        };
        for part in code {
            // words of code, and the strings inside it (`load("tests/x.json")`)
            out.extend(
                part.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '(' | ')'))
                    .map(str::to_string),
            );
        }
    }
    // [text](target) links
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        if let Some(end) = after.find(')') {
            out.push(after[..end].to_string());
        }
        rest = &rest[i + 2..];
    }
    out.into_iter()
        .map(|p| {
            without_scheme(&p)
                .trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '.' | '(' | ')' | '"' | '\''))
                .split('#')
                .next()
                .unwrap_or("")
                .to_string()
        })
        .filter(|p| looks_like_repository_path(p, roots))
        .collect()
}

/// A word is checked when it is a source file (`.rs`, `.sh`, `.py`, wherever it is) or a path
/// that starts in one of the repository's own folders (`docs/`, `crates/`, `scripts/`, a
/// crate's `src/` or `tests/`…): output a session makes (`runs/`, `merged/`, `OUT/…`) starts
/// elsewhere and is not the repository's to have.
fn looks_like_repository_path(p: &str, roots: &BTreeSet<String>) -> bool {
    if p.is_empty()
        || p.contains("://")
        || p.starts_with(['/', '~', '$', '<', '-', '.'])
        || p.contains(['<', '>', '*', '{', '}', '$', '=', '|', '?', '%', ':'])
        || p.contains("..")
    {
        return false;
    }
    let ext = p.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
    if matches!(ext, "rs" | "sh" | "py") {
        return true;
    }
    match p.split_once('/') {
        Some((first, _)) => {
            roots.contains(first) && (SOURCE.contains(&ext) || p.ends_with('/') || !p.contains('.'))
        }
        None => p == "ARCHITECTURE.md",
    }
}

/// The folders a repository path may start with: the root's entries and each crate's.
fn roots(paths: &BTreeSet<String>) -> BTreeSet<String> {
    paths
        .iter()
        .filter_map(|p| {
            let parts: Vec<&str> = p.split('/').collect();
            match parts.as_slice() {
                [top] => Some(top.to_string()),
                ["crates", _, inner] => Some(inner.to_string()),
                _ => None,
            }
        })
        .collect()
}

/// A `sim:`/`script:` argument names its file after the colon.
fn without_scheme(word: &str) -> &str {
    match word.split_once(':') {
        Some((scheme, rest))
            if !rest.starts_with("//") && scheme.chars().all(|c| c.is_ascii_lowercase()) =>
        {
            rest
        }
        _ => word,
    }
}

/// Whether `p`, named in the document at `doc` (relative), is a repository path.
fn exists(p: &str, doc_dir: &str, paths: &BTreeSet<String>) -> bool {
    let p = p.trim_end_matches('/');
    let joined = if doc_dir.is_empty() {
        p.to_string()
    } else {
        format!("{doc_dir}/{p}")
    };
    let tail = format!("/{p}");
    paths.contains(p) || paths.contains(&joined) || paths.iter().any(|have| have.ends_with(&tail))
}

#[test]
fn the_documents_name_only_files_that_exist() {
    let root = root();
    let paths = repository_paths(&root);
    let roots = roots(&paths);
    let mut missing = Vec::new();
    for doc in documents(&root, &paths) {
        let text = std::fs::read_to_string(&doc).expect("a document");
        let rel = doc
            .strip_prefix(&root)
            .expect("under the root")
            .to_string_lossy()
            .into_owned();
        let dir = rel.rsplit_once('/').map(|(d, _)| d).unwrap_or("");
        for p in named_paths(&text, &roots) {
            if !exists(&p, dir, &paths) {
                missing.push(format!("{rel} names {p}, which the repository lacks"));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn the_reader_finds_paths_and_leaves_other_words_alone() {
    let text = "See `crates/ufo/src/main.rs`, `settle.rs`, [serve](docs/serve.md#tokens) and \
                `<out>/events.jsonl`, `~/.config/ufo/ufo.toml`, `events.jsonl`, `ufo run`, \
                [site](https://example.org/a.md), `$XDG_DATA_HOME/ufo/x.json`.";
    let paths: BTreeSet<String> = [
        "docs",
        "docs/serve.md",
        "crates",
        "crates/ufo-linux",
        "crates/ufo-linux/src",
        "crates/ufo-linux/src/act",
        "crates/ufo-linux/src/act/settle.rs",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    let roots = roots(&paths);
    assert_eq!(
        named_paths(text, &roots),
        ["crates/ufo/src/main.rs", "settle.rs", "docs/serve.md"]
    );
    let more = "`sim:docs/lab.json`, `runs/suite/results.jsonl`, `OUT/results.jsonl`, `merged/`, \
                `src/act/`";
    assert_eq!(named_paths(more, &roots), ["docs/lab.json", "src/act/"]);
    assert!(exists("settle.rs", "", &paths));
    assert!(exists("act/settle.rs", "crates/ufo-linux", &paths));
    assert!(exists("serve.md", "docs", &paths));
    assert!(!exists("tests/scenarios/writer.json", "", &paths));
    let code = "```rust\nlet d = SimDesktop::load(\"docs/writer.json\")?;\n```";
    assert_eq!(named_paths(code, &roots), ["docs/writer.json"]);
}
