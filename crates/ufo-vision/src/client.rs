//! [`WorkerDetector`]: the [`Detector`] port answered by the worker process `ufo-sight`
//! (docs/sight.md, "The worker"). ufo itself never links libtesseract: the worker does, and
//! runs with `OMP_THREAD_LIMIT=1`, can be killed when a read outlives its time, and keeps
//! Tesseract's and Leptonica's stderr in ufo's log instead of the console.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::Mutex;
use ufo_core::vision::{DetectError, DetectRequest, DetectedBox, Detector, RegionImage};

use crate::protocol::{decode_reply, encode_request, frame_len, MAX_REPLY};

/// The worker's file name.
pub const WORKER_NAME: &str = "ufo-sight";

/// How to get the worker, for messages and `ufo doctor`.
pub const WORKER_INSTALL: &str = "ufo-sight (`cargo install --path crates/ufo-vision --features \
     tesseract`, with the Debian packages libtesseract-dev libleptonica-dev tesseract-ocr-eng \
     pkg-config libclang1-14 libclang-common-14-dev; scripts/test-deps.sh install_sight)";

/// Failed starts or reads in a row after which the worker is not started again in this
/// process: a worker that crashes on every region must not cost a start per observation.
pub const MAX_FAILURES: u32 = 3;

/// Where the worker is looked for, first found wins: the configured path (`[vision] worker`),
/// then next to ufo's own executable, then each directory of `PATH`.
pub fn worker_candidates(
    configured: Option<&Path>,
    own_exe: Option<&Path>,
    path_var: Option<&std::ffi::OsStr>,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    out.extend(configured.map(Path::to_path_buf));
    out.extend(own_exe.and_then(Path::parent).map(|d| d.join(WORKER_NAME)));
    if let Some(p) = path_var {
        out.extend(std::env::split_paths(p).map(|d| d.join(WORKER_NAME)));
    }
    out
}

/// The worker's path, or the places looked at when it is nowhere. A configured path that
/// does not exist is an error of its own: the user asked for that file.
pub fn find_worker(configured: Option<&Path>) -> Result<PathBuf, DetectError> {
    if let Some(c) = configured.filter(|c| !c.is_file()) {
        return Err(DetectError::Missing {
            what: format!("the worker configured as [vision] worker = {}", c.display()),
            install: format!("{WORKER_INSTALL} there, or correct the path"),
        });
    }
    let exe = std::env::current_exe().ok();
    let path = std::env::var_os("PATH");
    worker_candidates(configured, exe.as_deref(), path.as_deref())
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| DetectError::Missing {
            what: format!("the detection worker {WORKER_NAME} (looked next to ufo and on PATH)"),
            install: WORKER_INSTALL.into(),
        })
}

/// A running worker and its pipes.
struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// The worker's state between calls.
#[derive(Default)]
struct State {
    running: Option<Running>,
    failures: u32,
}

/// The [`Detector`] answered by a `ufo-sight` worker, started on the first call and kept for
/// the next ones. Each call is bounded by the timeout; a worker that times out, crashes or
/// answers out of protocol is killed and started again on the next call, at most
/// [`MAX_FAILURES`] times in a row.
pub struct WorkerDetector {
    program: PathBuf,
    timeout: Duration,
    state: Mutex<State>,
}

impl std::fmt::Debug for WorkerDetector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerDetector")
            .field("program", &self.program)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl WorkerDetector {
    /// A detector that runs `program` (a `ufo-sight`) and waits at most `timeout` per read.
    pub fn new(program: PathBuf, timeout: Duration) -> Self {
        Self {
            program,
            timeout,
            state: Mutex::new(State::default()),
        }
    }

    /// The worker's path.
    pub fn program(&self) -> &Path {
        &self.program
    }

    fn start(&self) -> Result<Running, DetectError> {
        let mut child = Command::new(&self.program)
            // Debian's libtesseract uses OpenMP, which reads this only when the library
            // loads: set for the child, before it starts (docs/sight.md).
            .env("OMP_THREAD_LIMIT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| DetectError::Missing {
                what: format!("the detection worker {} ({e})", self.program.display()),
                install: WORKER_INSTALL.into(),
            })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(DetectError::Engine(
                "the worker started without its pipes; retry".into(),
            ));
        };
        if let Some(stderr) = child.stderr.take() {
            tokio::spawn(log_stderr(stderr));
        }
        Ok(Running {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }
}

/// One request and its reply on a running worker.
async fn exchange(run: &mut Running, request: &[u8]) -> Result<Vec<DetectedBox>, DetectError> {
    let broken = |e: std::io::Error| {
        DetectError::Engine(format!(
            "the detection worker stopped ({e}); it is started again on the next read"
        ))
    };
    run.stdin.write_all(request).await.map_err(broken)?;
    run.stdin.flush().await.map_err(broken)?;
    let mut prefix = [0u8; 4];
    run.stdout.read_exact(&mut prefix).await.map_err(broken)?;
    let len = frame_len(prefix, MAX_REPLY, "worker's reply")?;
    let mut body = vec![0u8; len];
    run.stdout.read_exact(&mut body).await.map_err(broken)?;
    decode_reply(&body)?.into()
}

/// The lines the worker writes on stderr, into the log: at most 200 lines of at most 4 KiB
/// per worker, so a noisy library cannot fill the log.
async fn log_stderr(stderr: impl AsyncRead + Unpin) {
    let mut buf = [0u8; 4096];
    let mut reader = BufReader::new(stderr);
    let mut lines = 0u32;
    while let Ok(n) = reader.read(&mut buf).await {
        if n == 0 {
            break;
        }
        for line in String::from_utf8_lossy(&buf[..n]).lines() {
            if lines < 200 && !line.trim().is_empty() {
                tracing::warn!(target: "ufo_sight", "{line}");
                lines += 1;
            }
        }
    }
}

#[async_trait]
impl Detector for WorkerDetector {
    async fn detect(
        &self,
        region: &RegionImage,
        request: DetectRequest,
    ) -> Result<Vec<DetectedBox>, DetectError> {
        let mut state = self.state.lock().await;
        if state.failures >= MAX_FAILURES {
            return Err(DetectError::Engine(format!(
                "the detection worker {} failed {MAX_FAILURES} times in a row and is off for \
                 this run; see the log's ufo_sight lines and run `ufo doctor`",
                self.program.display()
            )));
        }
        if state.running.is_none() {
            match self.start() {
                Ok(r) => state.running = Some(r),
                Err(e) => {
                    state.failures += 1;
                    return Err(e);
                }
            }
        }
        let bytes = encode_request(region, request);
        let Some(run) = state.running.as_mut() else {
            return Err(DetectError::Engine(
                "the worker is not running; retry".into(),
            ));
        };
        let result = match tokio::time::timeout(self.timeout, exchange(run, &bytes)).await {
            Ok(r) => r,
            Err(_) => Err(DetectError::TimedOut(self.timeout.as_millis() as u64)),
        };
        match &result {
            // The worker answered in protocol (boxes, or its own error for this region).
            Ok(_) | Err(DetectError::BadImage(_) | DetectError::Missing { .. }) => {
                state.failures = 0;
            }
            // Out of step or stuck: kill it; the next call starts a fresh one.
            Err(DetectError::Engine(_) | DetectError::TimedOut(_)) => {
                state.failures += 1;
                if let Some(mut r) = state.running.take() {
                    let _ = r.child.start_kill();
                    let _ = tokio::time::timeout(Duration::from_secs(2), r.child.wait()).await;
                }
            }
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;

    #[test]
    fn the_configured_worker_comes_first_then_next_to_ufo_then_path() {
        let path = std::env::join_paths(["/a", "/b"]).expect("plain paths");
        let c = worker_candidates(
            Some(Path::new("/opt/w")),
            Some(Path::new("/x/bin/ufo")),
            Some(&path),
        );
        assert_eq!(
            c,
            vec![
                PathBuf::from("/opt/w"),
                PathBuf::from("/x/bin/ufo-sight"),
                PathBuf::from("/a/ufo-sight"),
                PathBuf::from("/b/ufo-sight"),
            ]
        );
        let none: Option<OsString> = None;
        assert!(worker_candidates(None, None, none.as_deref()).is_empty());
    }

    #[test]
    fn a_configured_worker_that_is_not_there_says_so() {
        let e = find_worker(Some(Path::new("/nonexistent/ufo-sight"))).expect_err("missing");
        let m = e.to_string();
        assert!(
            m.contains("[vision] worker") && m.contains("cargo install"),
            "{m}"
        );
    }

    #[tokio::test]
    async fn a_worker_that_is_not_there_fails_and_then_stays_off() {
        let d = WorkerDetector::new("/nonexistent/ufo-sight".into(), Duration::from_secs(1));
        let region = RegionImage::new((0, 0), 1, 1, ufo_core::vision::PixelFormat::Gray8, vec![0])
            .expect("one pixel");
        for _ in 0..MAX_FAILURES {
            let e = d.detect(&region, DetectRequest::Controls).await;
            assert!(matches!(e, Err(DetectError::Missing { .. })), "{e:?}");
        }
        let e = d.detect(&region, DetectRequest::Controls).await;
        assert!(
            matches!(&e, Err(DetectError::Engine(m)) if m.contains("off for this run")),
            "{e:?}"
        );
    }

    /// A stand-in worker that never answers: the call must end at its timeout and the
    /// worker be killed.
    #[tokio::test]
    async fn a_stuck_worker_is_abandoned_at_the_timeout() {
        let dir = std::env::temp_dir().join(format!("ufo-sight-stuck-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let script = dir.join("ufo-sight");
        // written by a shell of its own, not by this process: a test thread that forks while
        // this process holds the file open for writing keeps it so until its exec, and the
        // worker's exec then fails with "Text file busy" (it did once in CI)
        let written = std::process::Command::new("sh")
            .args([
                "-c",
                "printf '#!/bin/sh\\nexec sleep 30\\n' > \"$1\" && chmod 755 \"$1\"",
                "sh",
            ])
            .arg(&script)
            .status()
            .expect("sh runs");
        assert!(written.success(), "the stand-in worker is written");
        let d = WorkerDetector::new(script, Duration::from_millis(300));
        let region = RegionImage::new((0, 0), 1, 1, ufo_core::vision::PixelFormat::Gray8, vec![0])
            .expect("one pixel");
        let started = std::time::Instant::now();
        let e = d.detect(&region, DetectRequest::Controls).await;
        let _ = std::fs::remove_dir_all(&dir);
        assert!(matches!(e, Err(DetectError::TimedOut(300))), "{e:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(
            d.state.lock().await.running.is_none(),
            "the stuck worker is gone"
        );
        assert_eq!(d.state.lock().await.failures, 1);
    }
}
