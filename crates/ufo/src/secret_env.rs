//! Keeping the provider keys out of every `/proc/<pid>/environ` (see [`ufo_core::secrets`]).
//!
//! `/proc/<pid>/environ` shows the environment a process was started with, and any child of
//! ufo can read its parent's (`cat /proc/$PPID/environ`; as root nothing stops it). Removing
//! a variable later changes nothing there. So, before anything else, [`take_at_start`]:
//!
//! 1. takes the secret variables (by [`ufo_core::secrets::is_secret_env`]) from the
//!    environment, and any handed over by a parent ufo (the fd named by [`MARKER`]);
//! 2. if the environment held any, writes them into a memory file (`memfd`, inherited across
//!    `exec`) and `execve`s `/proc/self/exe` with the same arguments and the environment
//!    without them: the same process (same PID, terminal, stdin, signal dispositions; the
//!    exit status and Ctrl-C work as before), now started without the secrets;
//! 3. in the re-executed process, reads the memory file once, closes it, and keeps the
//!    secrets in memory ([`ufo_core::secrets::hold`]);
//! 4. marks the process not dumpable (`PR_SET_DUMPABLE` 0), so an unprivileged child cannot
//!    read its memory (`/proc/<pid>/mem`) nor its environment.
//!
//! Workers that ufo starts itself (batch workers, the command inside a private desktop) get
//! the secrets the same way, never through their environment: [`pass_on_stdin`] and
//! [`pass_in_memfd`].

use std::ffi::{CString, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// Environment variable that names the file descriptor holding the secrets handed over by a
/// parent ufo (`0` for stdin). Removed from the environment as soon as it is read.
pub const MARKER: &str = "UFO_SECRETS_FD";

/// Most bytes read from the handed-over secrets (the environment itself is smaller).
const MAX_SECRETS: u64 = 4 << 20;

/// What [`take_at_start`] did, for a warning once logging is set up.
#[derive(Debug, Default)]
pub struct Startup {
    /// Why the secrets could not be hidden from `/proc` (they stay in this process's
    /// original environment), if so.
    pub warning: Option<String>,
}

/// Secret variables as bytes: `name\0value\0` for each.
fn encode(vars: &[(OsString, OsString)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in vars {
        out.extend_from_slice(k.as_bytes());
        out.push(0);
        out.extend_from_slice(v.as_bytes());
        out.push(0);
    }
    out
}

/// The variables of [`encode`]'s bytes (a trailing incomplete pair is dropped).
fn decode(bytes: &[u8]) -> Vec<(OsString, OsString)> {
    let mut parts = bytes.split(|b| *b == 0);
    let mut out = Vec::new();
    while let (Some(k), Some(v)) = (parts.next(), parts.next()) {
        if !k.is_empty() {
            out.push((
                OsString::from_vec(k.to_vec()),
                OsString::from_vec(v.to_vec()),
            ));
        }
    }
    out
}

/// Read the secrets handed over on file descriptor `fd` and close it (stdin is read to its
/// end and left open: a worker's stdin carries nothing else).
fn read_handed_over(fd: &str) -> Result<Vec<(OsString, OsString)>, String> {
    let n: i32 = fd
        .trim()
        .parse()
        .map_err(|_| format!("{MARKER}={fd:?} is not a file descriptor number"))?;
    let mut bytes = Vec::new();
    if n == 0 {
        std::io::stdin()
            .lock()
            .take(MAX_SECRETS)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the secrets from stdin: {e}"))?;
        return Ok(decode(&bytes));
    }
    if n < 3 {
        return Err(format!("{MARKER}={n} names stdout or stderr"));
    }
    let read = std::fs::File::open(format!("/proc/self/fd/{n}"))
        .and_then(|f| f.take(MAX_SECRETS).read_to_end(&mut bytes));
    // close it whatever happened, so no child inherits a handle on the secrets
    let _ = nix::unistd::close(n);
    read.map_err(|e| format!("cannot read the secrets from file descriptor {n}: {e}"))?;
    Ok(decode(&bytes))
}

/// Run first in `main`, while the process has one thread: take the secrets out of the
/// environment (re-executing the binary if it held any) and keep them in memory. Returns
/// only in the process that will do the work.
pub fn take_at_start() -> Startup {
    let mut startup = Startup::default();
    let mut secrets: Vec<(OsString, OsString)> = Vec::new();
    if let Some(fd) = std::env::var_os(MARKER) {
        std::env::remove_var(MARKER);
        match read_handed_over(&fd.to_string_lossy()) {
            Ok(v) => secrets.extend(v),
            Err(e) => startup.warning = Some(e),
        }
    }
    let in_env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| ufo_core::secrets::is_secret_env(&k.to_string_lossy()))
        .collect();
    // the environment's value wins over one handed over, as when it was read directly
    for (k, v) in in_env.iter().cloned() {
        secrets.retain(|(name, _)| *name != k);
        secrets.push((k, v));
    }
    if !in_env.is_empty() {
        // returns only if the re-execution failed
        let e = reexec_without(&secrets);
        startup.warning = Some(format!(
            "cannot re-start ufo without the keys in its environment ({e}); a command ufo \
             runs could read them through /proc/{}/environ",
            std::process::id()
        ));
    }
    ufo_core::secrets::hold(secrets.iter().map(|(k, v)| {
        (
            k.to_string_lossy().into_owned(),
            v.to_string_lossy().into_owned(),
        )
    }));
    // children ufo starts drop these names too (ufo_proc::scrub_env); this process's own
    // lookups read the held copies first
    let _ = nix::sys::prctl::set_dumpable(false);
    startup
}

/// `execve` `/proc/self/exe` with the same arguments, the environment without the secret
/// variables, and the secrets in an inherited memory file named by [`MARKER`]. Returns the
/// error when it could not.
fn reexec_without(secrets: &[(OsString, OsString)]) -> String {
    let fd = match memfd_with(&encode(secrets), false) {
        Ok(fd) => fd,
        Err(e) => return e,
    };
    let to_c = |b: Vec<u8>| CString::new(b).map_err(|e| e.to_string());
    let argv: Result<Vec<CString>, String> =
        std::env::args_os().map(|a| to_c(a.into_vec())).collect();
    let mut envp: Vec<CString> = Vec::new();
    for (k, v) in std::env::vars_os() {
        if ufo_core::secrets::is_secret_env(&k.to_string_lossy()) || k == MARKER {
            continue;
        }
        let mut pair = k.into_vec();
        pair.push(b'=');
        pair.extend(v.into_vec());
        match to_c(pair) {
            Ok(c) => envp.push(c),
            Err(e) => return e,
        }
    }
    match to_c(format!("{MARKER}={}", fd.as_raw_fd()).into_bytes()) {
        Ok(c) => envp.push(c),
        Err(e) => return e,
    }
    let argv = match argv {
        Ok(a) => a,
        Err(e) => return format!("an argument holds a NUL byte: {e}"),
    };
    match nix::unistd::execve(c"/proc/self/exe", &argv, &envp) {
        Ok(never) => match never {},
        Err(e) => format!("execve /proc/self/exe: {e}"),
    }
}

/// A memory file holding `bytes`, positioned at its start; closed on exec unless `inherit`.
fn memfd_with(bytes: &[u8], close_on_exec: bool) -> Result<OwnedFd, String> {
    use nix::sys::memfd::{memfd_create, MFdFlags};
    let flags = if close_on_exec {
        MFdFlags::MFD_CLOEXEC
    } else {
        MFdFlags::empty()
    };
    let fd = memfd_create(c"ufo-secrets", flags).map_err(|e| format!("memfd_create: {e}"))?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)
        .map_err(|e| format!("cannot write the memory file: {e}"))?;
    Ok(OwnedFd::from(file))
}

/// Give a worker (this binary) the held secrets on its stdin, which must otherwise be empty:
/// sets [`MARKER`] to `0` and a piped stdin. After spawning, call [`write_to_stdin`].
pub fn pass_on_stdin(cmd: &mut std::process::Command) {
    cmd.env(MARKER, "0").stdin(std::process::Stdio::piped());
}

/// Write the held secrets into a worker's stdin and close it (see [`pass_on_stdin`]).
pub fn write_to_stdin(child: &mut std::process::Child) -> std::io::Result<()> {
    let Some(mut stdin) = child.stdin.take() else {
        return Ok(());
    };
    let vars: Vec<(OsString, OsString)> = ufo_core::secrets::held_vars()
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    stdin.write_all(&encode(&vars))
    // dropped: the worker reads to the end
}

/// The held secrets as a worker reads them on its stdin (see [`pass_on_stdin`]), for a
/// worker spawned asynchronously.
pub fn held_on_stdin() -> Vec<u8> {
    let vars: Vec<(OsString, OsString)> = ufo_core::secrets::held_vars()
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    encode(&vars)
}

/// Give a worker (this binary) whose stdin must stay the terminal the held secrets in a
/// memory file inherited across exec, named by [`MARKER`]. Keep the returned descriptor
/// until the worker is spawned, then drop it. Call it from a thread that no other thread
/// spawns processes beside (the descriptor is inherited by any process started meanwhile).
pub fn pass_in_memfd(cmd: &mut std::process::Command) -> Result<Option<OwnedFd>, String> {
    let vars: Vec<(OsString, OsString)> = ufo_core::secrets::held_vars()
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    if vars.is_empty() {
        return Ok(None);
    }
    let fd = memfd_with(&encode(&vars), false)?;
    // the reader opens /proc/self/fd/N, which starts at offset 0 of a memory file
    cmd.env(MARKER, fd.as_raw_fd().to_string());
    Ok(Some(fd))
}

/// The value of an environment variable as this process sees it: a held secret first, then
/// the environment.
pub fn var(name: &str) -> Option<String> {
    ufo_core::secrets::held(name).or_else(|| std::env::var(name).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_round_trip_through_their_encoding() {
        let vars = vec![
            (OsString::from("OPENAI_API_KEY"), OsString::from("sk-1=2 3")),
            (OsString::from("EMPTY_API_KEY"), OsString::new()),
            (
                OsString::from("UFO_LLM_HEADERS"),
                OsString::from("A: b\nC: d"),
            ),
        ];
        assert_eq!(decode(&encode(&vars)), vars);
        assert!(decode(b"").is_empty());
        assert_eq!(decode(b"A\0b\0C"), vec![("A".into(), "b".into())]);
    }

    #[test]
    fn a_bad_marker_is_an_error_not_a_panic() {
        assert!(read_handed_over("x").is_err());
        assert!(read_handed_over("1").is_err());
        assert!(read_handed_over("999999").is_err());
    }
}
