//! Who may do what: the one access decision of every network surface (docs/security.md,
//! "Who may do what").
//!
//! A **caller** is either the person who owns the machine (a terminal, or one of their own
//! processes on a session's control socket) or the holder of a token `ufo serve` made, which
//! carries a name and a [`Role`]. A **session** has an [`Owner`]: the token that started it
//! from the web console, or the terminal, which shares it with the tokens it names
//! (`--share NAME`) and with nobody else. The server itself runs with **flags**
//! ([`ServerFlags`]) that bound everything a token can make it do, whatever its role.
//!
//! [`on_session`] decides the operations on one session, [`on_server`] the operations that
//! need no session (starting one, the desktop's tools over MCP). The web console, `/mcp` and
//! the control socket all ask these two functions; none decides on its own. Pure logic, no
//! I/O.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What a token may do (chosen when it is made: `ufo serve token add NAME --role ROLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Every session started from the console, whoever started it, and what the server's
    /// flags allow; terminal sessions only when they are shared with it.
    Admin,
    /// Its own sessions, and terminal sessions shared with it; what the server's flags allow.
    #[default]
    User,
    /// Watches what is shared with it and reads the desktop; never acts, answers or starts.
    Viewer,
}

impl Role {
    /// Every role, for help texts.
    pub const ALL: [Role; 3] = [Role::Admin, Role::User, Role::Viewer];

    /// Its name as written in the token file and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::User => "user",
            Role::Viewer => "viewer",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role {0:?}: use admin, user or viewer")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "admin" => Ok(Role::Admin),
            "user" => Ok(Role::User),
            "viewer" => Ok(Role::Viewer),
            _ => Err(UnknownRole(s.to_string())),
        }
    }
}

/// A token holder: the token's name and role.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Principal {
    /// The token's name (`ufo serve token add NAME`).
    pub name: String,
    /// What it may do.
    pub role: Role,
}

/// Who asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// The machine's own user: a terminal, or one of their processes on a control socket.
    Owner,
    /// A token holder, through the web console or `/mcp`.
    Token(Principal),
}

/// Who a session belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "lowercase")]
pub enum Owner {
    /// Started in a terminal (or any way but the console): its user's, shared with the token
    /// names listed (`--share NAME`) and with nobody else.
    Terminal {
        /// Token names that may reach it from the console.
        #[serde(default)]
        shared: Vec<String>,
    },
    /// Started from the web console with this token.
    Token {
        /// The token's name.
        name: String,
    },
}

impl Owner {
    /// A session started in a terminal and shared with nobody.
    pub fn private_terminal() -> Owner {
        Owner::Terminal { shared: Vec::new() }
    }

    fn shared_with(&self, name: &str) -> bool {
        match self {
            Owner::Terminal { shared } => shared.iter().any(|s| s == name),
            Owner::Token { .. } => false,
        }
    }
}

/// What a caller does with one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SessionOp {
    /// See it listed, follow its records and screenshots, read its report and state.
    Watch,
    /// Answer its CONFIRM or PENDING question.
    Answer,
    /// End it, as Ctrl-C does.
    Cancel,
    /// Take its private desktop over, see and drive it, hand it back.
    TakeOver,
}

impl SessionOp {
    /// Every operation.
    pub const ALL: [SessionOp; 4] = [
        SessionOp::Watch,
        SessionOp::Answer,
        SessionOp::Cancel,
        SessionOp::TakeOver,
    ];

    /// Its name in messages and in docs/security.md's table.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionOp::Watch => "watch",
            SessionOp::Answer => "answer",
            SessionOp::Cancel => "cancel",
            SessionOp::TakeOver => "take over",
        }
    }
}

/// The answer to a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go on.
    Allow,
    /// The caller may not know the thing exists: answer as if it did not (404, not listed).
    Hidden,
    /// The caller sees it but may not do this: refuse, saying why (403).
    Forbidden(String),
}

impl Verdict {
    /// Whether it allows.
    pub fn allowed(&self) -> bool {
        matches!(self, Verdict::Allow)
    }
}

/// May `caller` do `op` with a session of `owner`?
///
/// | caller | its own | another token's | a terminal's, shared with it | a terminal's, not shared |
/// |---|---|---|---|---|
/// | owner | all | all | all | all |
/// | admin | all | all | all | hidden |
/// | user | all | hidden | all | hidden |
/// | viewer | watch | hidden | watch | hidden |
pub fn on_session(caller: &Caller, owner: &Owner, op: SessionOp) -> Verdict {
    let principal = match caller {
        Caller::Owner => return Verdict::Allow,
        Caller::Token(p) => p,
    };
    let reaches = match owner {
        Owner::Token { name } => name == &principal.name || principal.role == Role::Admin,
        Owner::Terminal { .. } => owner.shared_with(&principal.name),
    };
    if !reaches {
        return Verdict::Hidden;
    }
    match (principal.role, op) {
        (Role::Admin | Role::User, _) | (Role::Viewer, SessionOp::Watch) => Verdict::Allow,
        (Role::Viewer, op) => Verdict::Forbidden(format!(
            "the token {:?} is a viewer: it may watch this session, not {}; ask the server's \
             owner for a user token",
            principal.name,
            op.as_str()
        )),
    }
}

/// What the server was started to allow (`ufo serve`'s flags): no token can make it do more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerFlags {
    /// `--llm`: sessions may be started from the console with these models.
    pub models: bool,
    /// `--allow-actions`: the desktop may be changed.
    pub actions: bool,
    /// `--allow-shell`: shell commands may run on this machine.
    pub shell: bool,
}

/// What a caller asks of the server itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerOp {
    /// Read the desktop: windows, observations, screenshots (`/mcp`).
    Observe,
    /// Change the desktop: act, type, launch (`/mcp`).
    Act,
    /// Run shell commands on this machine (`/mcp`'s `run_shell`; a console session's `Bash`
    /// and shell agent).
    Shell,
    /// Start a session from the console.
    StartSession,
    /// Start a session whose held actions run without asking anyone (`confirm: yes`).
    ApproveUnasked,
}

impl ServerOp {
    /// Every operation.
    pub const ALL: [ServerOp; 5] = [
        ServerOp::Observe,
        ServerOp::Act,
        ServerOp::Shell,
        ServerOp::StartSession,
        ServerOp::ApproveUnasked,
    ];

    /// Its name in messages and in docs/security.md's table.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerOp::Observe => "observe the desktop",
            ServerOp::Act => "act on the desktop",
            ServerOp::Shell => "run shell commands",
            ServerOp::StartSession => "start a session",
            ServerOp::ApproveUnasked => "start a session with confirm: yes",
        }
    }
}

/// May `caller` do `op` on a server started with `flags`?
///
/// | op | server flag needed | roles |
/// |---|---|---|
/// | observe | — | every role |
/// | act | `--allow-actions` | admin, user |
/// | shell | `--allow-actions --allow-shell` | admin, user |
/// | start a session | `--llm` and `--allow-actions` | admin, user |
/// | confirm: yes | as start | admin |
///
/// The owner is bounded by the flags too: they say what the server may do at all.
pub fn on_server(caller: &Caller, flags: ServerFlags, op: ServerOp) -> Verdict {
    if let Some(flag) = missing_flag(flags, op) {
        return Verdict::Forbidden(format!(
            "this server was not started to {}: it needs `ufo serve {flag}`",
            op.as_str()
        ));
    }
    let role = match caller {
        Caller::Owner => return Verdict::Allow,
        Caller::Token(p) => p.role,
    };
    let allowed = match (role, op) {
        (_, ServerOp::Observe) => true,
        (Role::Admin, _) => true,
        (Role::User, ServerOp::ApproveUnasked) => false,
        (Role::User, ServerOp::Act | ServerOp::Shell | ServerOp::StartSession) => true,
        (Role::Viewer, _) => false,
    };
    if allowed {
        Verdict::Allow
    } else {
        Verdict::Forbidden(format!(
            "a {role} token may not {}; ask the server's owner for {} token",
            op.as_str(),
            if op == ServerOp::ApproveUnasked {
                "an admin"
            } else {
                "a user"
            }
        ))
    }
}

/// The flag `op` needs that `flags` lacks, as written on the command line.
fn missing_flag(flags: ServerFlags, op: ServerOp) -> Option<&'static str> {
    match op {
        ServerOp::Observe => None,
        ServerOp::Act if !flags.actions => Some("--allow-actions"),
        ServerOp::Shell if !flags.actions || !flags.shell => Some("--allow-actions --allow-shell"),
        ServerOp::StartSession | ServerOp::ApproveUnasked if !flags.models => Some("--llm SPEC"),
        ServerOp::StartSession | ServerOp::ApproveUnasked if !flags.actions => {
            Some("--allow-actions")
        }
        ServerOp::Act | ServerOp::Shell | ServerOp::StartSession | ServerOp::ApproveUnasked => None,
    }
}

/// Whether `name` may name a token (and a `--share` entry): 1 to 64 letters, digits or
/// `-_.@`.
pub fn valid_token_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '@'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn token(name: &str, role: Role) -> Caller {
        Caller::Token(Principal {
            name: name.into(),
            role,
        })
    }

    fn started_by(name: &str) -> Owner {
        Owner::Token { name: name.into() }
    }

    fn terminal(shared: &[&str]) -> Owner {
        Owner::Terminal {
            shared: shared.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_terminal_session_is_reached_only_by_the_owner_and_whom_it_names() {
        for op in SessionOp::ALL {
            assert_eq!(
                on_session(&Caller::Owner, &terminal(&[]), op),
                Verdict::Allow
            );
            for role in Role::ALL {
                assert_eq!(
                    on_session(&token("guest", role), &terminal(&[]), op),
                    Verdict::Hidden,
                    "{role} {op:?}"
                );
                assert_eq!(
                    on_session(&token("guest", role), &terminal(&["alice"]), op),
                    Verdict::Hidden
                );
            }
            assert!(on_session(&token("alice", Role::User), &terminal(&["alice"]), op).allowed());
        }
    }

    #[test]
    fn tokens_are_kept_apart_but_an_admin_sees_every_console_session() {
        let alice = started_by("alice");
        for op in SessionOp::ALL {
            assert!(on_session(&token("alice", Role::User), &alice, op).allowed());
            assert_eq!(
                on_session(&token("bob", Role::User), &alice, op),
                Verdict::Hidden
            );
            assert!(on_session(&token("root", Role::Admin), &alice, op).allowed());
            assert_eq!(
                on_session(&token("eve", Role::Viewer), &alice, op),
                Verdict::Hidden
            );
        }
    }

    #[test]
    fn a_viewer_watches_what_is_shared_with_it_and_does_nothing_else() {
        let shared = terminal(&["eve"]);
        let eve = token("eve", Role::Viewer);
        assert!(on_session(&eve, &shared, SessionOp::Watch).allowed());
        for op in [SessionOp::Answer, SessionOp::Cancel, SessionOp::TakeOver] {
            assert!(
                matches!(on_session(&eve, &shared, op), Verdict::Forbidden(_)),
                "{op:?}"
            );
        }
    }

    #[test]
    fn the_server_flags_bound_every_caller() {
        let none = ServerFlags::default();
        for op in [
            ServerOp::Act,
            ServerOp::Shell,
            ServerOp::StartSession,
            ServerOp::ApproveUnasked,
        ] {
            for caller in [Caller::Owner, token("root", Role::Admin)] {
                let v = on_server(&caller, none, op);
                assert!(matches!(v, Verdict::Forbidden(_)), "{op:?} {v:?}");
            }
        }
        // --llm alone does not let the console start sessions that act
        let models = ServerFlags {
            models: true,
            ..ServerFlags::default()
        };
        let Verdict::Forbidden(why) =
            on_server(&token("a", Role::User), models, ServerOp::StartSession)
        else {
            panic!("a session that acts needs --allow-actions")
        };
        assert!(why.contains("--allow-actions"), "{why}");
        // shell needs both flags
        let actions = ServerFlags {
            models: true,
            actions: true,
            shell: false,
        };
        assert!(!on_server(&Caller::Owner, actions, ServerOp::Shell).allowed());
        assert!(on_server(&token("a", Role::User), actions, ServerOp::StartSession).allowed());
    }

    #[test]
    fn roles_within_the_flags() {
        let all = ServerFlags {
            models: true,
            actions: true,
            shell: true,
        };
        let user = token("u", Role::User);
        let viewer = token("v", Role::Viewer);
        let admin = token("a", Role::Admin);
        for op in ServerOp::ALL {
            assert!(on_server(&admin, all, op).allowed(), "{op:?}");
            assert_eq!(
                on_server(&viewer, all, op).allowed(),
                op == ServerOp::Observe,
                "{op:?}"
            );
            assert_eq!(
                on_server(&user, all, op).allowed(),
                op != ServerOp::ApproveUnasked,
                "{op:?}"
            );
        }
    }

    #[test]
    fn roles_parse_and_print() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>(), Ok(role));
        }
        assert_eq!(" Admin ".parse::<Role>(), Ok(Role::Admin));
        assert!("root".parse::<Role>().is_err());
        assert_eq!(Role::default(), Role::User);
    }

    fn any_role() -> impl Strategy<Value = Role> {
        prop_oneof![Just(Role::Admin), Just(Role::User), Just(Role::Viewer)]
    }

    fn any_op() -> impl Strategy<Value = SessionOp> {
        prop_oneof![
            Just(SessionOp::Watch),
            Just(SessionOp::Answer),
            Just(SessionOp::Cancel),
            Just(SessionOp::TakeOver)
        ]
    }

    proptest! {
        /// The gate's invariants, whatever the names: a token reaches a session only when it
        /// started it, is an admin and the session came from the console, or the session's
        /// terminal named it; only a viewer is ever told "forbidden", and only for more than
        /// watching.
        #[test]
        fn a_token_reaches_only_what_it_started_or_was_given(
            me in "[a-z]{1,3}",
            other in "[a-z]{1,3}",
            shared in proptest::collection::vec("[a-z]{1,3}", 0..4),
            role in any_role(),
            op in any_op(),
            console in any::<bool>(),
        ) {
            let owner = if console { started_by(&other) } else { Owner::Terminal { shared: shared.clone() } };
            let caller = token(&me, role);
            let v = on_session(&caller, &owner, op);
            let reaches = if console { me == other || role == Role::Admin } else { shared.contains(&me) };
            match v {
                Verdict::Allow => prop_assert!(reaches && (role != Role::Viewer || op == SessionOp::Watch)),
                Verdict::Hidden => prop_assert!(!reaches),
                Verdict::Forbidden(_) => prop_assert!(reaches && role == Role::Viewer && op != SessionOp::Watch),
            }
        }

        /// No role makes the server do what its flags do not allow.
        #[test]
        fn no_role_widens_the_flags(
            role in any_role(),
            models in any::<bool>(),
            actions in any::<bool>(),
            shell in any::<bool>(),
        ) {
            let flags = ServerFlags { models, actions, shell };
            let caller = token("x", role);
            prop_assert_eq!(on_server(&caller, flags, ServerOp::Act).allowed(), actions && role != Role::Viewer);
            prop_assert!(!on_server(&caller, flags, ServerOp::Shell).allowed() || (actions && shell));
            prop_assert!(!on_server(&caller, flags, ServerOp::StartSession).allowed() || (models && actions));
            prop_assert!(!on_server(&caller, flags, ServerOp::ApproveUnasked).allowed() || (models && actions && role == Role::Admin));
        }
    }
}
