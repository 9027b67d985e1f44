//! The structure ARCHITECTURE.md promises, checked on the code itself: within every crate of
//! the workspace no files import each other in a circle, and in the crates whose folders are
//! layers (`ufo-linux`, `ufo`) no file imports one of a higher layer. Run it to see where a
//! crate stands: `cargo test -p ufo --test structure -- --nocapture` prints every circle and
//! every import that runs back up, with the names it takes.
//!
//! Imports are read with `syn` from every source file a crate's `lib.rs`/`main.rs` reaches
//! through `mod` (test modules left out): `use` trees and every path in the code that starts
//! with `crate::`, `super::`, `self::` or a child module's name, resolved to the deepest
//! module that has a file, through the names a `use` passes on. A `pub use` is a facade, not
//! an import: the file that names what it passes on imports the file that defines it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// One crate's layers, lowest first: each a list of top-level module names (a module's
/// folder or file under `src/`). The crate root (`lib.rs`, `main.rs`) stands above them all.
struct Layers {
    krate: &'static str,
    layers: &'static [&'static [&'static str]],
}

/// The layers of the crates that have them (ARCHITECTURE.md's crate maps).
const LAYERS: &[Layers] = &[
    Layers {
        krate: "ufo-linux",
        layers: &[
            &["error", "config", "vocab", "names", "part"],
            &["a11y"],
            &["display"],
            &["controls"],
            &["launch"],
            &["apps"],
            &["observe"],
            &["act"],
            &["desktop", "demo", "doctor"],
        ],
    },
    Layers {
        krate: "ufo",
        layers: &[
            // the terminal, files, models: what every part uses
            &[
                "exit",
                "output",
                "secret_env",
                "folder",
                "cancel",
                "console",
                "logging",
                "highlight",
                "sharing",
                "shell_off",
                "extensions",
                "models",
                "demo_file",
            ],
            // the desktops a command names
            &[
                "desktop",
                "private_wayland",
                "private",
                "devices",
                "wayland_connect",
                "sight",
            ],
            // settings and the plans the command line resolves into
            &["config"],
            // the trajectory (writer, reader, report, runs), the person, knowledge
            &[
                "recorder",
                "trajectory",
                "user",
                "experience",
                "session_knowledge",
            ],
            // the session pipeline and its control socket
            &["control", "session"],
            &["batch"],
            &["console_web"],
            &["cli"],
            &["commands"],
        ],
    },
];

/// A crate's modules, found from its root through `mod` declarations.
#[derive(Default)]
struct ModuleTree {
    /// Module path → the file that holds it (inline modules share their file).
    files: BTreeMap<Vec<String>, PathBuf>,
    /// File → its syntax tree.
    parsed: BTreeMap<PathBuf, syn::File>,
    /// File → the module paths it holds (its own and its inline modules').
    modules_of: BTreeMap<PathBuf, Vec<Vec<String>>>,
    /// (module, name) → the path its `use` gives that name, as written there (a crate's root
    /// and a folder's `mod.rs` pass names on: `crate::LinuxError` is `error.rs`'s).
    uses: BTreeMap<(Vec<String>, String), Vec<String>>,
}

fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|a| match &a.meta {
        syn::Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

impl ModuleTree {
    fn of(root: &Path) -> ModuleTree {
        let mut tree = ModuleTree::default();
        let dir = root
            .parent()
            .expect("a root file has a folder")
            .to_path_buf();
        tree.load(Vec::new(), root.to_path_buf(), dir);
        tree
    }

    /// Read `file`, the module `path`, whose child modules' files are in `child_dir`.
    fn load(&mut self, path: Vec<String>, file: PathBuf, child_dir: PathBuf) {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let parsed = syn::parse_file(&text)
            .unwrap_or_else(|e| panic!("cannot parse {}: {e}", file.display()));
        self.files.insert(path.clone(), file.clone());
        self.modules_of
            .entry(file.clone())
            .or_default()
            .push(path.clone());
        let items = parsed.items.clone();
        self.parsed.insert(file.clone(), parsed);
        self.items(&path, &file, &child_dir, &items);
    }

    fn items(&mut self, path: &[String], file: &Path, child_dir: &Path, items: &[syn::Item]) {
        for item in items {
            if let syn::Item::Use(u) = item {
                if !is_test_only(&u.attrs) {
                    let mut named = Vec::new();
                    use_names(&u.tree, Vec::new(), &mut named);
                    for (name, full) in named {
                        self.uses.insert((path.to_vec(), name), full);
                    }
                }
                continue;
            }
            let syn::Item::Mod(m) = item else { continue };
            if is_test_only(&m.attrs) {
                continue;
            }
            let mut child = path.to_vec();
            child.push(m.ident.to_string());
            match &m.content {
                Some((_, inner)) => {
                    self.files.insert(child.clone(), file.to_path_buf());
                    self.modules_of
                        .entry(file.to_path_buf())
                        .or_default()
                        .push(child.clone());
                    let dir = child_dir.join(m.ident.to_string());
                    self.items(&child, file, &dir, inner);
                }
                None => {
                    let name = m.ident.to_string();
                    let (found, dir) = match path_attr(&m.attrs) {
                        Some(p) => {
                            let f = file.parent().expect("a folder").join(p);
                            let d = f.with_extension("");
                            (f, d)
                        }
                        None => {
                            let flat = child_dir.join(format!("{name}.rs"));
                            if flat.exists() {
                                (flat, child_dir.join(&name))
                            } else {
                                (child_dir.join(&name).join("mod.rs"), child_dir.join(&name))
                            }
                        }
                    };
                    self.load(child, found, dir);
                }
            }
        }
    }
}

/// The paths a file names, each as written (segments), with the module it is written in.
struct Paths {
    module: Vec<String>,
    found: Vec<(Vec<String>, Vec<String>)>,
}

impl Paths {
    fn add(&mut self, segments: Vec<String>) {
        if !segments.is_empty() {
            self.found.push((self.module.clone(), segments));
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if is_test_only(&m.attrs) {
            return;
        }
        if let Some((_, items)) = &m.content {
            self.module.push(m.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.module.pop();
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test_only(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_test_only(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        // a `pub use` passes a name on (a facade); who uses the name imports its source
        if is_test_only(&u.attrs) || !matches!(u.vis, syn::Visibility::Inherited) {
            return;
        }
        let mut out = Vec::new();
        use_paths(&u.tree, Vec::new(), &mut out);
        for p in out {
            self.add(p);
        }
    }

    // `pub(crate)` names no module
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.add(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
}

/// The names a `use` tree brings into its module, each with the path it stands for.
fn use_names(tree: &syn::UseTree, prefix: Vec<String>, out: &mut Vec<(String, Vec<String>)>) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut next = prefix;
            next.push(p.ident.to_string());
            use_names(&p.tree, next, out);
        }
        syn::UseTree::Name(n) => {
            let mut full = prefix;
            full.push(n.ident.to_string());
            if n.ident != "self" {
                out.push((n.ident.to_string(), full));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix;
            full.push(r.ident.to_string());
            out.push((r.rename.to_string(), full));
        }
        syn::UseTree::Glob(_) => {}
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_names(t, prefix.clone(), out);
            }
        }
    }
}

fn use_paths(tree: &syn::UseTree, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut next = prefix;
            next.push(p.ident.to_string());
            use_paths(&p.tree, next, out);
        }
        syn::UseTree::Name(n) => {
            let mut full = prefix;
            full.push(n.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix;
            full.push(r.ident.to_string());
            out.push(full);
        }
        syn::UseTree::Glob(_) => out.push(prefix),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix.clone(), out);
            }
        }
    }
}

/// The module a path written in `module` means, as deep as the tree has modules, following
/// the names a module's `use` passes on; `None` for paths outside the crate.
fn resolve(tree: &ModuleTree, module: &[String], segments: &[String]) -> Option<Vec<String>> {
    resolve_within(tree, module, segments, 8)
}

fn resolve_within(
    tree: &ModuleTree,
    module: &[String],
    segments: &[String],
    depth: usize,
) -> Option<Vec<String>> {
    let mut at: Vec<String>;
    let mut rest = segments;
    match segments.first().map(String::as_str) {
        Some("crate") => {
            at = Vec::new();
            rest = &segments[1..];
        }
        Some("self") => {
            at = module.to_vec();
            rest = &segments[1..];
        }
        Some("super") => {
            at = module.to_vec();
            while rest.first().map(String::as_str) == Some("super") {
                at.pop();
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = module.to_vec();
            child.push(first.to_string());
            if !tree.files.contains_key(&child) {
                return None;
            }
            at = module.to_vec();
        }
        None => return None,
    }
    while let Some((seg, after)) = rest.split_first() {
        let mut next = at.clone();
        next.push(seg.clone());
        if tree.files.contains_key(&next) {
            at = next;
            rest = after;
            continue;
        }
        // a name the module's `use` brings in: where it comes from
        if depth > 0 {
            if let Some(full) = tree.uses.get(&(at.clone(), seg.clone())) {
                let mut again = full.clone();
                again.extend(after.iter().cloned());
                if let Some(found) = resolve_within(tree, &at, &again, depth - 1) {
                    return Some(found);
                }
            }
        }
        break;
    }
    Some(at)
}

/// An import of one file by another, with the names it takes.
type Edges = BTreeMap<(PathBuf, PathBuf), BTreeSet<String>>;

fn edges(tree: &ModuleTree) -> Edges {
    let mut out = Edges::new();
    for (file, parsed) in &tree.parsed {
        let root_module = tree.modules_of[file][0].clone();
        let mut paths = Paths {
            module: root_module,
            found: Vec::new(),
        };
        for item in &parsed.items {
            paths.visit_item(item);
        }
        for (module, segments) in paths.found {
            let Some(target) = resolve(tree, &module, &segments) else {
                continue;
            };
            let to = &tree.files[&target];
            if to != file {
                out.entry((file.clone(), to.clone()))
                    .or_default()
                    .insert(segments.last().cloned().unwrap_or_default());
            }
        }
    }
    out
}

/// The circles (strongly connected groups of two files or more), each sorted.
fn circles(edges: &Edges) -> Vec<Vec<PathBuf>> {
    let mut nodes: BTreeSet<&PathBuf> = BTreeSet::new();
    let mut next: BTreeMap<&PathBuf, Vec<&PathBuf>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        nodes.insert(a);
        nodes.insert(b);
        next.entry(a).or_default().push(b);
    }
    // Kosaraju: the order of finishing, then the reversed graph in that order
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for &n in &nodes {
        let mut stack = vec![(n, 0usize)];
        if !seen.insert(n) {
            continue;
        }
        while let Some((v, i)) = stack.pop() {
            let outs = next.get(v).map(Vec::as_slice).unwrap_or(&[]);
            if i < outs.len() {
                stack.push((v, i + 1));
                let w = outs[i];
                if seen.insert(w) {
                    stack.push((w, 0));
                }
            } else {
                order.push(v);
            }
        }
    }
    let mut back: BTreeMap<&PathBuf, Vec<&PathBuf>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        back.entry(b).or_default().push(a);
    }
    let mut placed = BTreeSet::new();
    let mut groups = Vec::new();
    for &n in order.iter().rev() {
        if !placed.insert(n) {
            continue;
        }
        let mut group = vec![n.clone()];
        let mut todo = vec![n];
        while let Some(v) = todo.pop() {
            for &w in back.get(v).map(Vec::as_slice).unwrap_or(&[]) {
                if placed.insert(w) {
                    group.push(w.clone());
                    todo.push(w);
                }
            }
        }
        if group.len() > 1 {
            group.sort();
            groups.push(group);
        }
    }
    groups
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the workspace")
}

/// Every crate of the workspace: its name and root file.
fn crates() -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(workspace().join("crates")).expect("crates/") {
        let dir = e.expect("an entry").path();
        for root in ["src/lib.rs", "src/main.rs"] {
            if dir.join(root).exists() {
                let name = dir
                    .file_name()
                    .expect("a name")
                    .to_string_lossy()
                    .into_owned();
                out.push((name, dir.join(root)));
            }
        }
    }
    out.sort();
    out
}

fn short(p: &Path) -> String {
    p.strip_prefix(workspace())
        .unwrap_or(p)
        .display()
        .to_string()
}

/// The layer of `file` in `layers` (the top-level module it belongs to); the root's is above
/// every layer. `None`: a top-level module no layer names.
fn layer_of(tree: &ModuleTree, layers: &Layers, file: &Path) -> Option<usize> {
    let module = tree.modules_of.get(file)?.first()?;
    let Some(top) = module.first() else {
        return Some(layers.layers.len());
    };
    layers.layers.iter().position(|l| l.contains(&top.as_str()))
}

#[test]
fn no_crate_has_an_import_circle_and_no_layer_imports_a_higher_one() {
    let mut problems = Vec::new();
    for (name, root) in crates() {
        let tree = ModuleTree::of(&root);
        let edges = edges(&tree);
        for circle in circles(&edges) {
            let mut lines = vec![format!(
                "{name}: a circle of {} files: {}",
                circle.len(),
                circle
                    .iter()
                    .map(|p| short(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            )];
            for ((a, b), names) in &edges {
                if circle.contains(a) && circle.contains(b) {
                    lines.push(format!(
                        "    {} -> {}: {}",
                        short(a),
                        short(b),
                        names.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
            problems.push(lines.join("\n"));
        }
        let Some(layers) = LAYERS.iter().find(|l| l.krate == name) else {
            continue;
        };
        for file in tree.parsed.keys() {
            if layer_of(&tree, layers, file).is_none() {
                problems.push(format!(
                    "{name}: {} is in no layer; name its folder in LAYERS",
                    short(file)
                ));
            }
        }
        for ((a, b), names) in &edges {
            if let (Some(la), Some(lb)) = (layer_of(&tree, layers, a), layer_of(&tree, layers, b)) {
                if la < lb {
                    problems.push(format!(
                        "{name}: {} imports {} of a higher layer: {}",
                        short(a),
                        short(b),
                        names.iter().cloned().collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        }
    }
    for p in &problems {
        println!("{p}");
    }
    let circles = problems.iter().filter(|p| p.contains("a circle")).count();
    let up = problems.len() - circles;
    println!("{circles} circles, {up} other problems");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Functions this long must say why above them (a doc or comment line with "long:").
const LONG_FN: usize = 80;

/// Every non-test function of at least [`LONG_FN`] lines in `file`: its name, its line count
/// and whether the lines above it say why it is long.
fn long_functions(file: &Path, parsed: &syn::File) -> Vec<(String, usize, bool)> {
    struct Finder<'s> {
        lines: &'s [&'s str],
        found: Vec<(String, usize, bool)>,
    }
    impl Finder<'_> {
        fn check(
            &mut self,
            name: String,
            attrs: &[syn::Attribute],
            sig: &syn::Signature,
            block: &syn::Block,
        ) {
            let start = sig.fn_token.span.start().line;
            let end = block.brace_token.span.close().end().line;
            let len = end.saturating_sub(start) + 1;
            if len < LONG_FN {
                return;
            }
            let doc = attrs
                .iter()
                .filter(|a| a.path().is_ident("doc"))
                .any(|a| quote_text(a).contains("long:"));
            let first = attrs
                .iter()
                .map(|a| a.pound_token.span.start().line)
                .min()
                .unwrap_or(start);
            let comment = (1..=3).any(|back| {
                first
                    .checked_sub(back + 1)
                    .and_then(|i| self.lines.get(i))
                    .is_some_and(|l| l.trim_start().starts_with("//") && l.contains("long:"))
            });
            self.found.push((name, len, doc || comment));
        }
    }
    fn quote_text(a: &syn::Attribute) -> String {
        match &a.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => s.value(),
                _ => String::new(),
            },
            _ => String::new(),
        }
    }
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
            if !is_test_only(&m.attrs) {
                syn::visit::visit_item_mod(self, m);
            }
        }
        fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
            if !is_test_only(&f.attrs) {
                self.check(f.sig.ident.to_string(), &f.attrs, &f.sig, &f.block);
            }
        }
        fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
            if !is_test_only(&f.attrs) {
                self.check(f.sig.ident.to_string(), &f.attrs, &f.sig, &f.block);
            }
        }
        fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
            if !is_test_only(&i.attrs) {
                syn::visit::visit_item_impl(self, i);
            }
        }
    }
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let mut finder = Finder {
        lines: &lines,
        found: Vec::new(),
    };
    finder.visit_file(parsed);
    finder.found
}

/// Files this long are split (tests aside).
const LONG_FILE: usize = 1500;

#[test]
fn functions_read_as_named_steps_and_files_stay_short() {
    let mut problems = Vec::new();
    let mut long = 0;
    for (name, root) in crates() {
        let tree = ModuleTree::of(&root);
        for (file, parsed) in &tree.parsed {
            let lines = std::fs::read_to_string(file)
                .unwrap_or_default()
                .lines()
                .count();
            if lines > LONG_FILE {
                problems.push(format!("{name}: {} has {lines} lines", short(file)));
            }
            for (f, len, said) in long_functions(file, parsed) {
                long += 1;
                println!(
                    "{name}: {} {f}: {len} lines{}",
                    short(file),
                    if said { " (says why)" } else { "" }
                );
                if !said {
                    problems.push(format!(
                        "{name}: {} {f} has {len} lines; split it into named steps or say \
                         why above it (a comment with \"long:\")",
                        short(file)
                    ));
                }
            }
        }
    }
    println!("{long} functions of {LONG_FN} lines or more");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reader_finds_circles_and_resolves_relative_paths() {
    let a = PathBuf::from("a.rs");
    let b = PathBuf::from("b.rs");
    let c = PathBuf::from("c.rs");
    let mut e = Edges::new();
    e.insert((a.clone(), b.clone()), BTreeSet::new());
    e.insert((b.clone(), a.clone()), BTreeSet::new());
    e.insert((b.clone(), c.clone()), BTreeSet::new());
    assert_eq!(circles(&e), vec![vec![a.clone(), b.clone()]]);
    let mut tree = ModuleTree::default();
    for (m, f) in [
        (vec![], "lib.rs"),
        (vec!["x"], "x/mod.rs"),
        (vec!["x", "y"], "x/y.rs"),
        (vec!["z"], "z.rs"),
    ] {
        tree.files
            .insert(m.iter().map(|s| s.to_string()).collect(), PathBuf::from(f));
    }
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        resolve(
            &tree,
            &s(&["x", "y"]),
            &s(&["super", "super", "z", "Thing"])
        ),
        Some(s(&["z"]))
    );
    assert_eq!(
        resolve(&tree, &s(&["x"]), &s(&["y", "f"])),
        Some(s(&["x", "y"]))
    );
    assert_eq!(resolve(&tree, &s(&["x"]), &s(&["std", "fs"])), None);
    assert_eq!(
        resolve(&tree, &s(&["z"]), &s(&["crate", "x", "Y"])),
        Some(s(&["x"]))
    );
}
