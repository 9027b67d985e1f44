//! The OSWorld task format: `id`, `instruction`, `config` steps, `evaluator`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::getters::command_line;
use crate::kinds::{GetterKind, MetricKind, StepKind};
use crate::BatchError;

/// One config (setup) step: `{"type": "launch", "parameters": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigStep {
    /// Step kind: `launch`, `execute`, `command`, `open`, `sleep`, `activate_window`, ...
    #[serde(rename = "type")]
    pub kind: String,
    /// The step's parameters.
    #[serde(default)]
    pub parameters: Value,
}

impl ConfigStep {
    /// The step's `command` parameter (a string or a list of words) as shell text.
    pub fn command_text(&self) -> Option<String> {
        self.parameters.get("command").and_then(command_line)
    }
}

/// One value or a list of them (OSWorld allows both for `func`, `result`, `expected`,
/// `options`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A list.
    Many(Vec<T>),
    /// A single value.
    One(T),
}

impl<T: Clone> OneOrMany<T> {
    /// The values as a list.
    pub fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// The evaluator of a task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluatorSpec {
    /// Metric function(s), e.g. `exact_match`, or a list of them.
    pub func: OneOrMany<String>,
    /// Getter(s) of the result, e.g. `{"type": "vm_command_line", "command": "..."}`.
    #[serde(default)]
    pub result: Option<OneOrMany<Value>>,
    /// Getter(s) of the expected value, e.g. `{"type": "rule", "rules": {...}}`.
    #[serde(default)]
    pub expected: Option<OneOrMany<Value>>,
    /// Options passed to the metric(s).
    #[serde(default)]
    pub options: Option<OneOrMany<Value>>,
    /// How several metrics combine: `and` (default) or `or`.
    #[serde(default)]
    pub conj: Option<String>,
    /// Steps run after the session and before the getters (same kinds as `config`).
    #[serde(default)]
    pub postconfig: Vec<ConfigStep>,
}

/// One task in the OSWorld JSON format, plus ufo-rs extensions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Task id (unique in a suite).
    pub id: String,
    /// What the agent is asked to do.
    pub instruction: String,
    /// Setup steps run before the session.
    #[serde(default)]
    pub config: Vec<ConfigStep>,
    /// How the final state is judged.
    pub evaluator: EvaluatorSpec,
    /// Applications the task involves (the first one names the task's app in the summary).
    #[serde(default)]
    pub related_apps: Vec<String>,
    /// ufo-rs extension: a scripted-model file (JSONL, the `--llm script:` format), relative
    /// to the task file, used instead of `--llm` for this task.
    #[serde(default)]
    pub ufo_script: Option<String>,
    /// Where the task was read from (set by [`Task::load`]).
    #[serde(skip)]
    pub source: PathBuf,
}

impl Task {
    /// Parse a task from JSON text; `source` is the file it came from (for relative paths).
    pub fn parse(text: &str, source: &Path) -> Result<Task, BatchError> {
        let mut task: Task = serde_json::from_str(text).map_err(|e| BatchError::Task {
            path: source.to_path_buf(),
            message: e.to_string(),
        })?;
        check_id(&task.id).map_err(|e| BatchError::Task {
            path: source.to_path_buf(),
            message: e.to_string(),
        })?;
        task.source = source.to_path_buf();
        Ok(task)
    }

    /// Read a task file.
    pub fn load(path: &Path) -> Result<Task, BatchError> {
        let text = std::fs::read_to_string(path).map_err(|e| BatchError::Io {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Task::parse(&text, path)
    }

    /// The folder of the task file (relative paths in the task resolve against it).
    pub fn dir(&self) -> PathBuf {
        self.source
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    }

    /// The scripted-model file of the task, resolved against the task's folder.
    pub fn script_path(&self) -> Option<PathBuf> {
        self.ufo_script.as_ref().map(|s| self.dir().join(s))
    }

    /// The application the task is counted under in the summary: the first of
    /// `related_apps`, else the program of the first `launch` step, else `other`.
    pub fn app(&self) -> String {
        if let Some(a) = self.related_apps.first() {
            return a.clone();
        }
        for step in &self.config {
            if StepKind::named(&step.kind) == Some(StepKind::Launch) {
                if let Some(cmd) = step.command_text() {
                    if let Some(first) = cmd.split_whitespace().next() {
                        return first.rsplit('/').next().unwrap_or(first).to_string();
                    }
                }
            }
        }
        "other".into()
    }

    /// Why this task cannot run here (an unsupported config step, getter or metric), if so.
    pub fn unsupported(&self) -> Option<String> {
        let steps = self.config.iter().chain(&self.evaluator.postconfig);
        for s in steps {
            if StepKind::named(&s.kind).is_none() {
                return Some(format!("unsupported config step `{}`", s.kind));
            }
        }
        for f in self.evaluator.func.to_vec() {
            if MetricKind::named(&f).is_none() {
                return Some(format!("unsupported evaluator function `{f}`"));
            }
        }
        let getters = self
            .evaluator
            .result
            .iter()
            .chain(&self.evaluator.expected)
            .flat_map(OneOrMany::to_vec);
        for g in getters {
            let kind = g.get("type").and_then(Value::as_str).unwrap_or("");
            if GetterKind::named(kind).is_none() {
                return Some(format!("unsupported getter `{kind}`"));
            }
        }
        if let Some(c) = &self.evaluator.conj {
            if c != "and" && c != "or" {
                return Some(format!("unsupported conj `{c}` (use and / or)"));
            }
        }
        None
    }
}

/// Longest task id (bytes): far beyond OSWorld's UUIDs (36) and any descriptive name, small
/// enough that ids cannot swell `results.jsonl`, `shard.json` and the summary.
pub const MAX_ID_BYTES: usize = 512;

/// A task id that cannot name a task, saying what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    /// Empty or only spaces.
    #[error("the task has an empty \"id\"; give it a name of its own (OSWorld uses a UUID)")]
    Empty,
    /// Longer than [`MAX_ID_BYTES`].
    #[error("the task's \"id\" is {0} bytes long; make it at most {MAX_ID_BYTES} bytes")]
    TooLong(usize),
    /// A control character (NUL, newline, escape, ...), which no name needs.
    #[error("the task's \"id\" holds the control character U+{0:04X}; use printable text")]
    Control(u32),
    /// `.` or `..`, which read as folders.
    #[error("the task's \"id\" is {0:?}, which reads as a folder; give it a name of its own")]
    Dots(&'static str),
}

/// Whether `id` can name a task: 1 to [`MAX_ID_BYTES`] bytes, not only spaces, no control
/// characters, not `.` or `..`. Any other text is a valid id (`/`, a leading `-`, any script):
/// [`folder_name`] makes a safe folder of it.
pub fn check_id(id: &str) -> Result<(), IdError> {
    if id.trim().is_empty() {
        return Err(IdError::Empty);
    }
    if id.len() > MAX_ID_BYTES {
        return Err(IdError::TooLong(id.len()));
    }
    if let Some(c) = id.chars().find(|c| c.is_control()) {
        return Err(IdError::Control(u32::from(c)));
    }
    match id {
        "." => Err(IdError::Dots(".")),
        ".." => Err(IdError::Dots("..")),
        _ => Ok(()),
    }
}

/// Longest task folder name (bytes); a longer encoded id is cut and a hash of the whole id
/// added, so that ids stay apart.
const MAX_FOLDER_NAME: usize = 200;

/// The folder name of a task id (`<out>/tasks/<name>`): the id itself when it is a plain name
/// (letters, digits, `_`, and `-` or `.` other than first), else the id with every other byte
/// written `%XX` (so `..` is `%2E.`, `a/b` is `a%2Fb`, `-rf` is `%2Drf`). The name never starts
/// with `-` (no program takes it for an option) or `.`, and holds no `/`. No id is refused and no
/// two ids share a folder; `results.jsonl` keeps the id as the task file gives it.
pub fn folder_name(id: &str) -> String {
    let mut name = String::with_capacity(id.len());
    for (i, b) in id.bytes().enumerate() {
        let plain = b.is_ascii_alphanumeric() || b == b'_' || ((b == b'.' || b == b'-') && i > 0);
        if plain {
            name.push(char::from(b));
        } else {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    if name.is_empty() {
        return "%".into();
    }
    if name.len() > MAX_FOLDER_NAME {
        // FNV-1a: stable across runs and versions, unlike the standard library's hasher
        let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        name.truncate(MAX_FOLDER_NAME - 17);
        name.push_str(&format!("~{hash:016x}"));
    }
    name
}

/// Every task file (`*.json`) named by `paths`: files as given, folders searched recursively,
/// in a stable (sorted) order.
pub fn collect_task_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, BatchError> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), BatchError> {
        let entries = std::fs::read_dir(dir).map_err(|e| BatchError::Io {
            path: dir.to_path_buf(),
            message: e.to_string(),
        })?;
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            if p.is_dir() {
                walk(&p, out)?;
            } else if p.extension().is_some_and(|e| e == "json") {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out)?;
        } else if p.is_file() {
            out.push(p.clone());
        } else {
            return Err(BatchError::Io {
                path: p.clone(),
                message: "no such file or folder".into(),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_osworld_task_parses_with_defaults() {
        let text = json!({
            "id": "t1", "instruction": "do it",
            "config": [{"type": "launch", "parameters": {"command": ["gnome-calculator"]}}],
            "evaluator": {"func": "exact_match",
                          "result": {"type": "vm_command_line", "command": "echo hi"},
                          "expected": {"type": "rule", "rules": {"expected": "hi"}}}
        })
        .to_string();
        let t = Task::parse(&text, Path::new("suite/t1.json")).unwrap();
        assert_eq!(t.app(), "gnome-calculator");
        assert_eq!(t.unsupported(), None);
        assert_eq!(t.dir(), PathBuf::from("suite"));
        assert_eq!(t.evaluator.func.to_vec(), vec!["exact_match".to_string()]);
    }

    #[test]
    fn unsupported_parts_are_named() {
        let mut t = Task::parse(
            r#"{"id":"x","instruction":"i","config":[{"type":"download","parameters":{}}],
                "evaluator":{"func":["exact_match","compare_pdfs"]}}"#,
            Path::new("x.json"),
        )
        .unwrap();
        assert_eq!(
            t.unsupported().as_deref(),
            Some("unsupported config step `download`")
        );
        t.config.clear();
        assert_eq!(
            t.unsupported().as_deref(),
            Some("unsupported evaluator function `compare_pdfs`")
        );
        t.evaluator.func = OneOrMany::One("exact_match".into());
        t.evaluator.result = Some(OneOrMany::One(json!({"type": "cloud_file"})));
        assert_eq!(
            t.unsupported().as_deref(),
            Some("unsupported getter `cloud_file`")
        );
    }

    #[test]
    fn bad_json_is_an_error_not_a_panic() {
        assert!(Task::parse("{", Path::new("a.json")).is_err());
        assert!(Task::parse(
            r#"{"id":"","instruction":"","evaluator":{"func":"infeasible"}}"#,
            Path::new("a.json")
        )
        .is_err());
    }

    #[test]
    fn an_id_that_cannot_name_a_task_is_refused_naming_the_file() {
        let task = |id: &str| {
            serde_json::json!({"id": id, "instruction": "i", "evaluator": {"func": "infeasible"}})
                .to_string()
        };
        let long = "x".repeat(MAX_ID_BYTES + 1);
        for (id, why) in [
            ("", "empty"),
            ("  ", "empty"),
            ("a\0b", "U+0000"),
            ("a\nb", "U+000A"),
            ("t\u{1b}[2J", "U+001B"),
            ("a\u{85}", "U+0085"),
            ("\u{7f}x", "U+007F"),
            (".", "reads as a folder"),
            ("..", "reads as a folder"),
            (long.as_str(), "513 bytes"),
        ] {
            let e = Task::parse(&task(id), Path::new("suite/bad.json")).expect_err(id);
            let text = e.to_string();
            assert!(text.contains("suite/bad.json"), "{id:?}: {text}");
            assert!(text.contains(why), "{id:?}: {text}");
        }
        // today's ids stay valid: UUIDs, names, paths, a leading dash, any script
        for id in [
            "bb5e4c0d-f964-439c-97b6-bdb9747de3f4",
            "calc_sum",
            "chrome/tabs",
            "-rf",
            "..a",
            "Σ täsk 名",
            &"x".repeat(MAX_ID_BYTES),
        ] {
            let t = Task::parse(&task(id), Path::new("t.json")).expect(id);
            assert_eq!(t.id, id);
        }
    }

    #[test]
    fn a_task_folder_name_is_one_plain_name_that_keeps_ids_apart() {
        assert_eq!(folder_name("0a1b-calc_sum.v2"), "0a1b-calc_sum.v2");
        // OSWorld's ids (UUIDs) are their own folder names, as before
        let uuid = "bb5e4c0d-f964-439c-97b6-bdb9747de3f4";
        assert_eq!(folder_name(uuid), uuid);
        assert_eq!(folder_name("-rf"), "%2Drf");
        assert_eq!(folder_name("--help"), "%2D-help");
        assert_ne!(folder_name("-rf"), folder_name("%2Drf"));
        for id in [
            "..", ".", "", "a/b", "/etc", "a\\b", "x\u{1b}y", "\u{202e}", "a\0b", "-rf", "-",
        ] {
            let name = folder_name(id);
            assert!(plain(&name), "{id:?} -> {name:?}");
        }
        assert_ne!(folder_name("a/b"), folder_name("a_b"));
        assert_ne!(folder_name(".."), folder_name("%2E."));
        assert!(folder_name(&"x".repeat(1000)).len() <= 200);
        assert_ne!(
            folder_name(&"x".repeat(1000)),
            folder_name(&"x".repeat(999))
        );
    }

    /// One path component that names a child of its folder, printable, not too long.
    fn plain(name: &str) -> bool {
        let p = Path::new(name);
        let mut parts = p.components();
        matches!(parts.next(), Some(std::path::Component::Normal(_)))
            && parts.next().is_none()
            && !name.starts_with('.')
            && !name.starts_with('-')
            && name.len() <= 200
            && name.chars().all(|c| c.is_ascii_graphic())
    }

    proptest::proptest! {
        #[test]
        fn any_id_gets_a_plain_folder_name_of_its_own(a in "\\PC*", b in "[-./%a-z\u{0}-\u{1f}]{0,6}") {
            proptest::prop_assert!(plain(&folder_name(&a)), "{:?}", a);
            proptest::prop_assert!(plain(&folder_name(&b)), "{:?}", b);
            if a != b {
                proptest::prop_assert_ne!(folder_name(&a), folder_name(&b));
            }
        }
    }
}
