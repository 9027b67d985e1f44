//! A LibreOffice of a test's own: a fresh profile and HOME in a temporary folder, started
//! with its GTK3 plugin (or another, to test a diagnosis), its window found among the
//! windows of the processes that carry the profile, and every one of them ended when the
//! test ends, pass or fail.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ufo_core::{Desktop, WindowInfo};
use ufo_linux::LinuxDesktop;

/// Fails the test when LibreOffice or its GTK3 plugin is missing (the live tests run only
/// where `scripts/test-deps.sh` installed them).
pub fn require_libreoffice_gtk3() {
    assert!(
        ufo_linux::libreoffice_gtk3_installed() && ufo_proc::which("libreoffice", None).is_some(),
        "LibreOffice with its GTK3 plugin is not installed: run scripts/test-deps.sh \
         install_libreoffice (as root)"
    );
}

/// A temporary LibreOffice profile and HOME; dropping it ends every process started with
/// the profile, then removes the folder.
pub struct OfficeGuard {
    profile_arg: String,
    /// the launcher, when the test started LibreOffice itself (reaped at the end)
    child: Option<std::process::Child>,
    // dropped after the processes are ended: they write in it until then
    dir: tempfile::TempDir,
}

impl Drop for OfficeGuard {
    fn drop(&mut self) {
        self.kill_all();
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl OfficeGuard {
    /// A new profile and HOME under a temporary folder named `prefix…`.
    pub fn new(prefix: &str) -> OfficeGuard {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .expect("cannot create a temporary folder");
        std::fs::create_dir_all(dir.path().join("home")).expect("cannot create the test's HOME");
        let profile_arg = format!(
            "-env:UserInstallation=file://{}",
            dir.path().join("profile").display()
        );
        OfficeGuard {
            profile_arg,
            child: None,
            dir,
        }
    }

    /// The `-env:UserInstallation=…` argument that selects the profile.
    pub fn profile_arg(&self) -> &str {
        &self.profile_arg
    }

    /// The temporary folder (the profile and HOME are in it; a test may keep files there).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The HOME LibreOffice runs with.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// End every LibreOffice process of this profile.
    pub fn kill_all(&self) {
        ufo_desktop::testing::end_processes_with_arg(&self.profile_arg);
    }

    /// Start `libreoffice --norestore --nologo ARGS` with this profile and HOME and the VCL
    /// plugin `plugin` (`gtk3`, or `gen` to see what ufo says of a LibreOffice it cannot
    /// read), in a process group of its own, with ufo's secrets scrubbed from its
    /// environment.
    pub fn start<S: AsRef<OsStr>>(&mut self, plugin: &str, args: &[S]) {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("libreoffice");
        ufo_proc::scrub_env_std(&mut cmd);
        let child = cmd
            .args(["--norestore", "--nologo", &self.profile_arg])
            .args(args)
            .env("SAL_USE_VCLPLUGIN", plugin)
            .env("HOME", self.home())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("cannot start libreoffice");
        self.child = Some(child);
    }

    /// The window of this profile's processes whose title contains `title`, waited for up
    /// to `within`.
    pub async fn window(&self, d: &LinuxDesktop, title: &str, within: Duration) -> WindowInfo {
        let deadline = Instant::now() + within;
        loop {
            let ours = ufo_proc::live_processes_with_arg(&self.profile_arg);
            let windows = d.windows().await.expect("list windows");
            if let Some(w) = windows
                .into_iter()
                .find(|w| w.pid.is_some_and(|p| ours.contains(&p)) && w.title.contains(title))
            {
                return w;
            }
            assert!(
                Instant::now() < deadline,
                "no window titled …{title}… of the LibreOffice this test started within \
                 {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}
