//! The TLS files of `ufo serve`, through the real binary on a simulated desktop (docs/serve.md,
//! "TLS and the fingerprint"): the key `--tls` makes is never written through a link planted
//! in its folder, and certificates and keys are read only when they are regular files of a
//! bounded size (a FIFO, `/dev/zero`, a huge file).

use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

mod common;
use common::served::{new_token, ufo_at, Served};

fn desktop_spec() -> String {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scenarios/host_fail/desktop.json");
    format!("sim:{}", file.display())
}

fn serve(home: &Path, extra: &[&str]) -> Served {
    Served::start(ufo_at(home), &desktop_spec(), extra)
}

/// `ufo serve` with `extra`, expected to refuse to start: its exit code, stderr and how long
/// it took.
fn refused_start(home: &Path, extra: &[&str]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let mut child = ufo_at(home)
        .args([
            "serve",
            "--desktop",
            &desktop_spec(),
            "--listen",
            "127.0.0.1:0",
        ])
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ufo starts");
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ufo serve {extra:?} still runs after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    (status.code(), stderr, started.elapsed())
}

/// A certificate and key made by `ufo serve --tls` in `home` (copied out of its folder).
fn made_pair(home: &Path) -> (PathBuf, PathBuf) {
    let made = tempfile::tempdir().expect("tempdir");
    new_token(made.path(), "laptop");
    let server = serve(made.path(), &["--tls"]);
    drop(server);
    let dir = made.path().join("data/ufo/serve/tls");
    let cert = home.join("cert.pem");
    let key = home.join("key.pem");
    std::fs::copy(dir.join("cert.pem"), &cert).expect("copy cert");
    std::fs::copy(dir.join("key.pem"), &key).expect("copy key");
    (cert, key)
}

/// `--tls-cert`/`--tls-key` must be regular files of at most 1 MiB: a FIFO does not hang the
/// start, `/dev/zero` does not exhaust memory, a huge file is not read whole; each is an exit
/// 2 naming the file. A link to a regular file is fine (certbot's `live/` holds links).
#[test]
fn tls_files_are_read_bounded_and_only_when_regular() {
    let home = tempfile::tempdir().expect("tempdir");
    new_token(home.path(), "laptop");
    let (cert, key) = made_pair(home.path());
    let fifo = home.path().join("cert.fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    let huge = home.path().join("huge.pem");
    std::fs::File::create(&huge)
        .and_then(|f| f.set_len(3 << 30))
        .expect("a sparse 3 GiB file");
    let s = |p: &Path| p.display().to_string();
    for (what, c, k) in [
        ("a FIFO certificate", s(&fifo), s(&key)),
        ("/dev/zero as key", s(&cert), "/dev/zero".to_string()),
        ("a 3 GiB key", s(&cert), s(&huge)),
    ] {
        let (code, stderr, took) = refused_start(home.path(), &["--tls-cert", &c, "--tls-key", &k]);
        eprintln!("{what}: exit {code:?} after {took:?}: {}", stderr.trim());
        assert_eq!(code, Some(2), "{what}: {stderr}");
        assert!(took < Duration::from_secs(10), "{what} took {took:?}");
        let named = if what.contains("certificate") { &c } else { &k };
        assert!(stderr.contains(named.as_str()), "{what}: {stderr}");
    }
    // links to regular files are followed
    let link = home.path().join("live-cert.pem");
    std::os::unix::fs::symlink(&cert, &link).expect("symlink");
    let served = serve(
        home.path(),
        &["--tls-cert", &s(&link), "--tls-key", &s(&key)],
    );
    assert!(served.url.starts_with("https://"), "{}", served.url);
}

/// `--tls` never writes its key through a link planted at `key.pem`: the link is replaced by a
/// new file of mode 0600 in a 0700 folder and the link's target is left as it was; a key that
/// others may read is refused.
#[test]
fn the_generated_key_is_never_written_through_a_link() {
    let home = tempfile::tempdir().expect("tempdir");
    new_token(home.path(), "laptop");
    let dir = home.path().join("data/ufo/serve/tls");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let target = home.path().join("exposed.pem");
    std::fs::write(&target, "nothing\n").expect("write");
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    std::os::unix::fs::symlink(&target, dir.join("key.pem")).expect("symlink");

    let served = serve(home.path(), &["--tls"]);
    assert!(served.url.starts_with("https://"));
    drop(served);
    assert_eq!(
        std::fs::read_to_string(&target).expect("read"),
        "nothing\n",
        "the key went through the link"
    );
    let key = std::fs::symlink_metadata(dir.join("key.pem")).expect("key.pem");
    assert!(key.file_type().is_file(), "key.pem is a regular file now");
    assert_eq!(key.permissions().mode() & 0o777, 0o600);
    let folder = std::fs::metadata(&dir).expect("tls folder");
    assert_eq!(folder.permissions().mode() & 0o777, 0o700);

    // a kept key that others may read is refused, saying what to do
    std::fs::set_permissions(dir.join("key.pem"), std::fs::Permissions::from_mode(0o644))
        .expect("chmod");
    let (code, stderr, _) = refused_start(home.path(), &["--tls"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("chmod 600"), "{stderr}");
    // and so is a kept key that is a link
    std::fs::remove_file(dir.join("key.pem")).expect("rm");
    std::os::unix::fs::symlink(&target, dir.join("key.pem")).expect("symlink");
    let (code, stderr, _) = refused_start(home.path(), &["--tls"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("link"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "nothing\n");
}
