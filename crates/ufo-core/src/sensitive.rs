//! Sensitive actions: what always goes through the CONFIRM gate, whatever Status the model
//! chose. A model fooled by text on the screen can ask for anything; it cannot skip this check.
//!
//! - Shell commands (the host's `Bash`, the shell agent): an **allow-list**. A command runs
//!   without confirmation only if it is the launch command of an application the desktop
//!   knows, or a single simple command (no `;`, `|`, `&&`, redirection, substitution) whose
//!   program is on `shell_allow` **and** resolves to a program of the system folders
//!   ([`SYSTEM_PROGRAM_DIRS`]; never a relative path), with per-program argument rules
//!   (`date` may not set the clock, `find` may not delete or run programs). See
//!   [`SensitivePolicy::shell_reason`].
//! - AppAgent actions: a control whose name contains one of `control_words` as a word (delete,
//!   send, close, install, ...), any function listed in `functions`, and typing into a password
//!   field (`password_fields`). A `click_at` (and the operator agent's clicks) is judged by
//!   the control under the point ([`control_at`]), like a `click` on that control.

use serde::{Deserialize, Serialize};

use crate::action::UiAction;
use crate::ports::{Control, WindowObservation};
use crate::shell_words;

/// The sensitive-action policy (`[sensitive]` in ufo.toml).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SensitivePolicy {
    /// Off: only the model's own CONFIRM holds actions.
    pub enabled: bool,
    /// Programs a shell command may start without confirmation.
    pub shell_allow: Vec<String>,
    /// Words in a control's name that make acting on it sensitive (whole words, any case).
    pub control_words: Vec<String>,
    /// Functions that are always sensitive (canonical names, e.g. `type_keys`, or tool names).
    pub functions: Vec<String>,
    /// Typing into a password field is sensitive.
    pub password_fields: bool,
}

impl Default for SensitivePolicy {
    fn default() -> Self {
        let words = |l: &[&str]| l.iter().map(|s| s.to_string()).collect();
        Self {
            enabled: true,
            shell_allow: words(&[
                "ls", "cat", "echo", "pwd", "head", "tail", "wc", "date", "whoami", "which",
                "grep", "file", "stat", "du", "df", "uname", "mkdir", "touch", "true",
            ]),
            control_words: words(&[
                "delete",
                "send",
                "close",
                "install",
                "uninstall",
                "erase",
                "discard",
                "purchase",
                "pay",
                "shutdown",
            ]),
            functions: Vec::new(),
            password_fields: true,
        }
    }
}

/// Characters that turn one command into several, or write where they should not.
const SHELL_OPERATORS: &[&str] = &[";", "|", "&", ">", "<", "`", "$(", "\n", "\r"];

/// The folders an allow-listed program must be found in (as an absolute path). A program
/// found elsewhere (a relative path such as `./ls`, a user's `~/bin`, `/tmp/x/ls`) is never
/// allow-listed, whatever its name.
pub const SYSTEM_PROGRAM_DIRS: &[&str] =
    &["/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin"];

/// Programs whose job is to run another program (or a shell): never allow-listed, even when
/// `shell_allow` names them, since the allow-list could not see what they run.
pub const RUNS_OTHER_PROGRAMS: &[&str] = &[
    "env", "xargs", "nice", "nohup", "timeout", "sudo", "doas", "su", "runuser", "pkexec", "sh",
    "bash", "dash", "zsh", "ksh", "fish", "exec", "command", "eval", "time", "watch", "strace",
    "setsid", "stdbuf", "chroot", "busybox", "flock", "ionice", "taskset", "unshare", "nsenter",
    "script", ".", "source", "trap", "builtin", "alias", "fc",
];

/// Words the shell reads as part of its grammar when they come first (POSIX reserved words,
/// and bash's): never a program, whatever `shell_allow` says.
const SHELL_KEYWORDS: &[&str] = &[
    "!", "{", "}", "case", "do", "done", "elif", "else", "esac", "fi", "for", "if", "in", "then",
    "until", "while", "[[", "]]", "function", "select", "coproc", "time",
];

/// Characters that make a command read differently by a person and by the shell: every
/// whitespace but the shell's blanks (a no-break space looks like a space but is part of a
/// word to `sh`), control characters, and the Unicode format and bidirectional characters a
/// terminal does not show (see [`crate::inert::is_unsafe`]). A command holding one is never
/// allow-listed. A newline is left to the operator check.
fn hidden_from_the_reader(c: char) -> bool {
    !matches!(c, ' ' | '\t' | '\n') && (c.is_whitespace() || crate::inert::is_unsafe(c))
}

/// `find` arguments that delete, run programs or write files.
const FIND_ACTIONS: &[&str] = &[
    "-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// Characters that make the shell rewrite a word (expansion, quoting, globbing): an argument
/// of a program with argument rules must not hold them, or the rule would judge a word the
/// program never sees (`date ${IFS}-s${IFS}2020`).
const REWRITTEN: &[char] = &['$', '\\', '\'', '"', '*', '?', '[', '{', '~'];

/// Where the shell that will run a command finds a program: `Some(absolute path)` or `None`
/// when it finds none. The adapter that runs the command supplies it (core reads no files):
/// a `PATH` lookup on the machine, a fixed answer on the simulated desktop.
pub type FindProgram<'a> = &'a (dyn Fn(&str) -> Option<String> + Sync);

/// Why `date` with these arguments needs confirmation: anything but reading the clock
/// (`-s`/`--set`, or an operand other than `+FORMAT`, sets it).
fn date_reason(args: &[&str]) -> Option<String> {
    let sets = |what: &str| {
        Some(format!(
            "date {what} may set the system clock; only reading the date (options -d, -u, -R, -I, -r, -f and +FORMAT) runs without confirmation"
        ))
    };
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        i += 1;
        if a.starts_with('+') {
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (name, has_value) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            match name {
                "date" | "file" | "reference" => {
                    if !has_value {
                        i += 1; // its value
                    }
                }
                "utc" | "universal" | "iso-8601" | "rfc-3339" | "rfc-email" | "rfc-2822"
                | "debug" | "help" | "version" | "resolution" => {}
                _ => return sets(&format!("with the option {a:?}")),
            }
            continue;
        }
        if let Some(cluster) = a.strip_prefix('-') {
            if cluster.is_empty() {
                return sets("with the operand \"-\"");
            }
            for (at, c) in cluster.char_indices() {
                match c {
                    'u' | 'R' => {}
                    // an optional value, attached
                    'I' => break,
                    'd' | 'f' | 'r' => {
                        if at + c.len_utf8() == cluster.len() {
                            i += 1; // its value is the next argument
                        }
                        break;
                    }
                    _ => return sets(&format!("with the option {a:?}")),
                }
            }
            continue;
        }
        return sets(&format!("with the operand {a:?}"));
    }
    None
}

/// Why these arguments of `program` need confirmation (per-program rules), or `None`.
fn argument_reason(program: &str, args: &[&str]) -> Option<String> {
    let ruled = matches!(program, "date" | "find");
    if !ruled {
        return None;
    }
    if let Some(a) = args.iter().find(|a| a.contains(REWRITTEN)) {
        return Some(format!(
            "the argument {a:?} of {program} holds quoting, expansion or glob characters; {program} runs without confirmation only with plain arguments"
        ));
    }
    match program {
        "date" => date_reason(args),
        "find" => args
            .iter()
            .find(|a| FIND_ACTIONS.contains(a))
            .map(|a| format!("find {a} deletes files, runs programs or writes files")),
        _ => None,
    }
}

/// Whether `path` is directly inside one of [`SYSTEM_PROGRAM_DIRS`] and named `name`.
fn in_system_dir(path: &str, name: &str) -> bool {
    match path.rsplit_once('/') {
        Some((dir, file)) => file == name && SYSTEM_PROGRAM_DIRS.contains(&dir),
        None => false,
    }
}

/// The innermost control whose rectangle holds the point (x, y) given in **window** pixels
/// (as `click_at` and the operator agent's coordinates are). Control rectangles are screen
/// pixels on both desktops, so the point is moved by the window's origin first.
pub fn control_at(obs: &WindowObservation, x: i32, y: i32) -> Option<&Control> {
    let (ox, oy) = obs.window.rect.map_or((0, 0), |r| (r.x, r.y));
    let (sx, sy) = (i64::from(ox) + i64::from(x), i64::from(oy) + i64::from(y));
    obs.controls
        .iter()
        .filter(|c| {
            let r = c.rect;
            r.w > 0
                && r.h > 0
                && sx >= i64::from(r.x)
                && sy >= i64::from(r.y)
                && sx < i64::from(r.x) + i64::from(r.w)
                && sy < i64::from(r.y) + i64::from(r.h)
        })
        .min_by_key(|c| u64::from(c.rect.w) * u64::from(c.rect.h))
}

impl SensitivePolicy {
    /// Why a shell command needs confirmation, or `None` when it may run.
    /// `launch_commands` are the desktop's known application launch commands; `find` says
    /// where the shell running the command would find a program (see [`FindProgram`]).
    ///
    /// A command runs unconfirmed only when it is a launch command, or a single simple
    /// command whose program (1) is named on `shell_allow`, (2) is not one that runs other
    /// programs ([`RUNS_OTHER_PROGRAMS`]), (3) is an absolute path in, or a bare name found
    /// in, one of [`SYSTEM_PROGRAM_DIRS`] (a relative path like `./ls` never is), and (4)
    /// passes its argument rules (`date` only reads the clock, `find` neither deletes nor
    /// runs programs).
    pub fn shell_reason(
        &self,
        command: &str,
        launch_commands: &[String],
        find: FindProgram<'_>,
    ) -> Option<String> {
        if !self.enabled {
            return None;
        }
        if let Some(c) = command.chars().find(|&c| hidden_from_the_reader(c)) {
            return Some(format!(
                "the shell command holds U+{:04X} (shown {}), which the shell does not read as a space and a terminal may not show as it is; only commands of plain characters run without confirmation",
                c as u32,
                crate::inert::inert_exact(&c.to_string())
            ));
        }
        // Only the shell's blanks are trimmed: a newline before or after the command is
        // another (empty) command line, held like any newline.
        let cmd = command.trim_matches(shell_words::is_blank);
        let bare = cmd
            .strip_suffix('&')
            .unwrap_or(cmd)
            .trim_matches(shell_words::is_blank);
        if launch_commands.iter().any(|l| l.trim() == bare) {
            return None;
        }
        if let Some(op) = SHELL_OPERATORS.iter().find(|op| cmd.contains(*op)) {
            return Some(format!(
                "the shell command uses the operator {op:?}; only single commands on the allow-list run without confirmation"
            ));
        }
        // The words the shell will run, read as `sh` reads them (never `split_whitespace`).
        let words = match shell_words::words(cmd) {
            Ok(w) => w,
            Err(e) => {
                return Some(format!(
                    "the shell command is not one simple command: it holds {e}; only single commands on the allow-list run without confirmation"
                ))
            }
        };
        let Some((first, rest)) = words.split_first() else {
            return Some("the shell command holds no program to judge".into());
        };
        self.program_reason(first, rest, find)
    }

    /// Why the command whose program word is `first` and whose arguments are `rest` does not
    /// run without confirmation (see [`shell_reason`](Self::shell_reason)), or `None`.
    fn program_reason(
        &self,
        first: &shell_words::ShellWord,
        rest: &[shell_words::ShellWord],
        find: FindProgram<'_>,
    ) -> Option<String> {
        let Some(program) = first.plain() else {
            return Some(format!(
                "the program word {:?} holds quoting or expansion, so the shell decides what it runs; only a plainly written program runs without confirmation",
                first.raw
            ));
        };
        if program.contains('=') {
            return Some(format!(
                "{program:?} sets a variable for the command after it; commands with variable assignments are never allow-listed"
            ));
        }
        if SHELL_KEYWORDS.contains(&program) {
            return Some(format!(
                "{program:?} is a shell keyword, not a program; it is never allow-listed"
            ));
        }
        let args: Vec<&str> = rest.iter().map(|w| w.raw.as_str()).collect();
        let name = program.rsplit('/').next().unwrap_or(program);
        if !self.shell_allow.iter().any(|a| a == name) {
            return Some(format!(
                "{name:?} is not on the shell allow-list ([sensitive] shell_allow)"
            ));
        }
        if RUNS_OTHER_PROGRAMS.contains(&name) {
            return Some(format!(
                "{name:?} runs other programs, so it is never allow-listed"
            ));
        }
        let path = match program_path(program, find) {
            Ok(path) => path,
            Err(why) => return Some(why),
        };
        if !in_system_dir(&path, name) {
            return Some(format!(
                "{program:?} is {path:?}, outside the system folders ({}); only their programs run without confirmation",
                SYSTEM_PROGRAM_DIRS.join(", ")
            ));
        }
        argument_reason(name, &args)
    }

    /// Why a tool call needs confirmation (the tool is listed in `functions`), or `None`.
    pub fn tool_reason(&self, tool: &str) -> Option<String> {
        (self.enabled && self.functions.iter().any(|f| f == tool))
            .then(|| format!("the tool {tool} is listed in [sensitive] functions"))
    }

    /// Why an AppAgent action needs confirmation, or `None`. `control` is the control acted
    /// on; for `click_at`, the control under the point ([`control_at`]).
    pub fn action_reason(&self, action: &UiAction, control: Option<&Control>) -> Option<String> {
        if !self.enabled {
            return None;
        }
        if self.functions.iter().any(|f| f == action.name()) {
            return Some(format!(
                "{} is listed in [sensitive] functions",
                action.name()
            ));
        }
        let control = control?;
        let typing = matches!(action, UiAction::SetText { .. } | UiAction::TypeKeys { .. });
        if typing && self.password_fields && control.role.to_ascii_lowercase().contains("password")
        {
            return Some("typing into a password field".into());
        }
        let acts_on_it = matches!(
            action,
            UiAction::Click { .. }
                | UiAction::ClickAt { .. }
                | UiAction::Select { .. }
                | UiAction::TypeKeys { .. }
        );
        if acts_on_it {
            let name = control.name.to_ascii_lowercase();
            let words: Vec<&str> = name
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .collect();
            if let Some(w) = self
                .control_words
                .iter()
                .find(|w| words.contains(&w.to_ascii_lowercase().as_str()))
            {
                return Some(format!(
                    "the control \"{}\" is sensitive (word {w:?} in [sensitive] control_words)",
                    control.name
                ));
            }
        }
        None
    }
}

/// Where `program` is: itself when absolute, else where `find` finds it on `PATH`; the
/// reason to hold the command when it is a relative path or found nowhere.
fn program_path(program: &str, find: FindProgram<'_>) -> Result<String, String> {
    if program.starts_with('/') {
        return Ok(program.to_string());
    }
    if program.contains('/') {
        return Err(format!(
            "{program:?} is a relative path; only programs of the system folders ({}) run without confirmation",
            SYSTEM_PROGRAM_DIRS.join(", ")
        ));
    }
    find(program).ok_or_else(|| {
        format!(
            "{program:?} was not found in a system folder on PATH; only programs of {} run without confirmation",
            SYSTEM_PROGRAM_DIRS.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Rect;

    fn control(role: &str, name: &str) -> Control {
        Control {
            source: Default::default(),
            id: "c".into(),
            role: role.into(),
            name: name.into(),
            value: None,
            rect: Rect::default(),
            enabled: true,
            states: Default::default(),
        }
    }

    /// A machine where every program is in /usr/bin.
    fn usr_bin(name: &str) -> Option<String> {
        Some(format!("/usr/bin/{name}"))
    }

    fn reason(p: &SensitivePolicy, cmd: &str) -> Option<String> {
        p.shell_reason(cmd, &["libreoffice --calc".to_string()], &usr_bin)
    }

    #[test]
    fn the_shell_allow_list_holds() {
        let p = SensitivePolicy::default();
        assert_eq!(reason(&p, "libreoffice --calc"), None);
        assert_eq!(reason(&p, "libreoffice --calc &"), None);
        assert_eq!(reason(&p, "echo report-ready"), None);
        assert_eq!(reason(&p, "/bin/ls -l"), None);
        assert_eq!(reason(&p, "ls -la"), None);
        assert!(reason(&p, "rm -rf ~").is_some());
        assert!(reason(&p, "echo hi; rm -rf ~").is_some());
        assert!(reason(&p, "echo $(rm -rf ~)").is_some());
        assert!(reason(&p, "cat x > /etc/passwd").is_some());
        assert!(reason(&p, "curl x | sh").is_some());
        let off = SensitivePolicy {
            enabled: false,
            ..SensitivePolicy::default()
        };
        assert_eq!(off.shell_reason("rm -rf ~", &[], &usr_bin), None);
    }

    /// Defect: the allow-list matched the program's basename, so `./ls` ran a local script.
    #[test]
    fn only_programs_of_the_system_folders_are_allow_listed() {
        let p = SensitivePolicy::default();
        for cmd in [
            "./ls",
            "bin/ls -la",
            "../ls",
            "/tmp/x/ls",
            "/usr/bin/../../tmp/ls",
        ] {
            let r = reason(&p, cmd).unwrap_or_else(|| panic!("{cmd} ran unconfirmed"));
            assert!(r.contains("system folders"), "{cmd}: {r}");
        }
        for cmd in ["/usr/bin/ls", "/bin/ls -l", "/usr/local/bin/ls", "/sbin/ls"] {
            assert_eq!(reason(&p, cmd), None, "{cmd}");
        }
        // what PATH finds is what runs: a user's ~/bin/ls first on PATH is not /usr/bin/ls
        let home_first = |n: &str| Some(format!("/home/u/bin/{n}"));
        let r = p.shell_reason("ls -la", &[], &home_first).expect("held");
        assert!(r.contains("/home/u/bin/ls"), "{r}");
        let relative_path = |n: &str| Some(format!("bin/{n}"));
        assert!(p.shell_reason("ls", &[], &relative_path).is_some());
        let nowhere = |_: &str| None;
        assert!(p
            .shell_reason("ls", &[], &nowhere)
            .is_some_and(|r| r.contains("not found")));
        // a resolver answering with another program's path does not pass either
        let other = |_: &str| Some("/usr/bin/rm".to_string());
        assert!(p.shell_reason("ls", &[], &other).is_some());
    }

    /// Defect (Unicode whitespace): the gate split commands with `split_whitespace`, `sh` only
    /// at a space or a tab, so `cat<U+00A0>x/../../../../bin/rm -rf v` was judged `cat` and ran
    /// /bin/rm unconfirmed.
    #[test]
    fn unicode_spaces_never_split_the_program_word() {
        let p = SensitivePolicy::default();
        for sp in [
            '\u{a0}', '\u{85}', '\u{2028}', '\u{2029}', '\u{3000}', '\u{200b}', '\u{feff}',
            '\u{b}', '\u{c}', '\u{1680}', '\u{202f}', '\u{2007}', '\r',
        ] {
            for cmd in [
                format!("cat{sp}x/../../../../bin/rm -rf VICTIM"),
                format!("ls{sp}x/../../../../bin/rm"),
                format!("mkdir cat{sp}x"),
                format!("echo a{sp}b"),
                format!("libreoffice --calc{sp}"),
                format!("{sp}libreoffice --calc"),
            ] {
                let r = reason(&p, &cmd).unwrap_or_else(|| panic!("{cmd:?} ran unconfirmed"));
                assert!(r.contains(&format!("U+{:04X}", sp as u32)), "{cmd:?}: {r}");
            }
        }
    }

    /// The program word is judged as the shell reads it: quoted, escaped or expanded program
    /// words, assignments and keywords are held; comments and quoted arguments are not.
    #[test]
    fn the_program_is_the_word_the_shell_runs() {
        let p = SensitivePolicy::default();
        for cmd in [
            "'ls'",
            "\\ls",
            "\"ls\" -l",
            "l$x",
            "l* x",
            "~/ls",
            "X=1 ls",
            "PATH=/tmp ls",
            "(ls)",
            "ls ${x:-a}",
            "ls 'a",
            "ls a\\",
            "ls $[1]",
            "ls\u{0}",
            "\nls",
            "ls\n",
        ] {
            assert!(reason(&p, cmd).is_some(), "{cmd:?} ran unconfirmed");
        }
        for cmd in [
            "ls # a comment",
            "echo 'a b' \"c d\" e\\ f",
            "cat *.txt",
            "ls\t-la",
            "  ls  ",
            "\tls\t",
        ] {
            assert_eq!(reason(&p, cmd), None, "{cmd:?}");
        }
        let mut with_keyword = SensitivePolicy::default();
        with_keyword
            .shell_allow
            .extend(["if".to_string(), "!".to_string(), ".".to_string()]);
        for cmd in ["if ls", "! ls", ". ./x"] {
            assert!(
                reason(&with_keyword, cmd).is_some(),
                "{cmd:?} ran unconfirmed"
            );
        }
    }

    /// Defect: `date -s …` passed unconfirmed.
    #[test]
    fn date_may_read_the_clock_but_not_set_it() {
        let p = SensitivePolicy::default();
        for cmd in [
            "date",
            "date +%Y-%m-%d",
            "date -u",
            "date -R",
            "date -Iseconds",
            "date -d tomorrow",
            "date -ud tomorrow +%s",
            "date --date=tomorrow",
            "date --date tomorrow",
            "date --utc --iso-8601=seconds",
            "date -r notes.txt",
        ] {
            assert_eq!(reason(&p, cmd), None, "{cmd}");
        }
        for cmd in [
            "date -s 2020-01-01",
            "date -s2020-01-01",
            "date -us 2020-01-01",
            "date --set=2020-01-01",
            "date --set 2020-01-01",
            "date --se=2020-01-01",
            "date 010112002020",
            "date -d tomorrow 0101",
            "date ${IFS}-s${IFS}2020",
            "date '-s' 2020",
            "date \\-s 2020",
            "/bin/date -s 2020-01-01",
        ] {
            assert!(reason(&p, cmd).is_some(), "{cmd} ran unconfirmed");
        }
    }

    #[test]
    fn find_may_list_but_not_delete_or_run_and_wrappers_never_pass() {
        let mut p = SensitivePolicy::default();
        p.shell_allow
            .extend(["find".to_string(), "env".to_string()]);
        // a glob could expand to a file named -delete
        assert!(reason(&p, "find . -name *.txt").is_some());
        assert_eq!(reason(&p, "find . -name notes.txt -type f"), None);
        for cmd in [
            "find . -delete",
            "find . -exec rm {} +",
            "find / -execdir sh",
            "find . -fprint /etc/x",
            "find . -name x -ok rm",
        ] {
            assert!(reason(&p, cmd).is_some(), "{cmd} ran unconfirmed");
        }
        assert!(reason(&p, "env rm -rf /").is_some_and(|r| r.contains("runs other programs")));
        assert_eq!(reason(&p, "du -sh ."), None);
        assert_eq!(reason(&p, "df -h"), None);
        assert_eq!(reason(&p, "mkdir -p a/b"), None);
        assert_eq!(reason(&p, "touch notes.txt"), None);
    }

    /// Defect: `click_at` on the point of "Delete All" was not held while `click` was.
    #[test]
    fn click_at_is_judged_by_the_control_under_the_point() {
        let window = crate::ports::WindowInfo {
            id: "w".into(),
            title: "Writer".into(),
            app_name: "Writer".into(),
            process: "writer".into(),
            pid: None,
            rect: Some(Rect {
                x: 40,
                y: 40,
                w: 480,
                h: 200,
            }),
        };
        let mut panel = control("pane", "Panel");
        panel.rect = Rect {
            x: 40,
            y: 40,
            w: 480,
            h: 200,
        };
        let mut delete = control("button", "Delete All");
        delete.rect = Rect {
            x: 52,
            y: 110,
            w: 456,
            h: 24,
        };
        let obs = WindowObservation {
            window,
            controls: vec![panel, delete],
            screenshot: None,
            annotated: None,
            warnings: Vec::new(),
            pixels_readable: false,
            pixel_changes: None,
        };
        // window pixels (100, 80) are screen pixels (140, 120): on Delete All, inside Panel
        let under = control_at(&obs, 100, 80).expect("a control");
        assert_eq!(under.name, "Delete All");
        assert_eq!(
            control_at(&obs, 100, 20).map(|c| c.name.as_str()),
            Some("Panel")
        );
        assert!(control_at(&obs, 600, 20).is_none());
        assert!(control_at(&obs, i32::MAX, i32::MAX).is_none());
        let p = SensitivePolicy::default();
        let at = UiAction::ClickAt { x: 100, y: 80 };
        assert!(p
            .action_reason(&at, control_at(&obs, 100, 80))
            .is_some_and(|r| r.contains("Delete All")));
        assert!(p.action_reason(&at, control_at(&obs, 100, 20)).is_none());
    }

    #[test]
    fn sensitive_controls_and_password_fields() {
        let p = SensitivePolicy::default();
        let click = UiAction::Click {
            button: crate::Button::Left,
            double: false,
        };
        assert!(p
            .action_reason(&click, Some(&control("button", "Delete All")))
            .is_some());
        assert!(p
            .action_reason(&click, Some(&control("button", "Send")))
            .is_some());
        assert!(p
            .action_reason(&click, Some(&control("button", "Sender info")))
            .is_none());
        assert!(p
            .action_reason(&click, Some(&control("button", "Export")))
            .is_none());
        let typing = UiAction::SetText { text: "x".into() };
        assert!(p
            .action_reason(&typing, Some(&control("password text", "Password")))
            .is_some());
        assert!(p
            .action_reason(&typing, Some(&control("edit", "Delete reason")))
            .is_none());
    }
}
