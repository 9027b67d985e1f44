//! Sight for the live desktop (docs/sight.md): `[vision]` resolved (whether text is read in a
//! window's pixels, and where the worker that reads it is; `ufo.toml`, then `UFO_VISION`,
//! then `--vision`), and the cached worker handed to the Linux desktop. Below `config`, so
//! the desktops that take it need not import the settings.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use serde::Deserialize;
use ufo_core::vision::{CachedDetector, DetectPolicy, VisionMode};

/// The `[vision]` section of `ufo.toml`.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VisionSection {
    /// `auto`, `always` or `off`.
    pub mode: Option<VisionMode>,
    /// The `ufo-sight` worker to run (default: next to ufo, then on `PATH`).
    pub worker: Option<PathBuf>,
}

/// `[vision]` resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VisionSettings {
    /// When the pixels are read.
    pub mode: VisionMode,
    /// The configured worker, if any.
    pub worker: Option<PathBuf>,
}

/// Regions kept by the cache of read pixels: a few windows' worth of changed regions.
const CACHE_REGIONS: usize = 64;

/// The longest one read may take before the worker is abandoned (and restarted).
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A mode as written in `UFO_VISION` or `--vision`.
pub fn parse_mode(what: &str, v: &str) -> Result<VisionMode> {
    match v.trim().to_ascii_lowercase().as_str() {
        "auto" => Ok(VisionMode::Auto),
        "always" => Ok(VisionMode::Always),
        "off" => Ok(VisionMode::Off),
        _ => bail!("{what} is {v:?}; set it to auto, always or off"),
    }
}

impl VisionSettings {
    /// The file's section, then `UFO_VISION`, then the flag.
    pub fn resolve(
        section: VisionSection,
        env: &dyn Fn(&str) -> Option<String>,
        flag: Option<VisionMode>,
    ) -> Result<Self> {
        let mut mode = section.mode.unwrap_or_default();
        if let Some(v) = env("UFO_VISION").filter(|v| !v.trim().is_empty()) {
            mode = parse_mode("UFO_VISION", &v)?;
        }
        if let Some(f) = flag {
            mode = f;
        }
        Ok(Self {
            mode,
            worker: section.worker,
        })
    }

    /// No text read (commands that do not observe).
    pub fn off() -> Self {
        Self {
            mode: VisionMode::Off,
            worker: None,
        }
    }

    /// For commands without a configuration file: `UFO_VISION` and the flag.
    pub fn from_env(flag: Option<VisionMode>) -> Result<Self> {
        Self::resolve(VisionSection::default(), &|k| std::env::var(k).ok(), flag)
    }

    /// The live desktop's sight: the worker found, cached; `None` when the mode is off or no
    /// worker is installed (said in the log; `ufo doctor` says how to install it).
    pub fn sight(&self) -> Option<ufo_linux::Sight> {
        if self.mode == VisionMode::Off {
            return None;
        }
        let worker = match ufo_vision::find_worker(self.worker.as_deref()) {
            Ok(w) => w,
            Err(e) => {
                tracing::info!("text detection is off: {e}");
                return None;
            }
        };
        let detector = ufo_vision::WorkerDetector::new(worker, READ_TIMEOUT);
        Some(ufo_linux::Sight {
            detector: Arc::new(CachedDetector::new(detector, CACHE_REGIONS)),
            mode: self.mode,
            policy: DetectPolicy::default(),
        })
    }
}

/// What `ufo doctor` says of sight: `(ok, what, fix)`. The worker is found and asked to load
/// its engine and model (`ufo-sight --check`, at most 10 s); sight is optional, so this is a
/// note, never a failed check.
pub async fn doctor_note(settings: &VisionSettings) -> (bool, String, Option<String>) {
    if settings.mode == VisionMode::Off {
        return (
            true,
            "text detection is off ([vision] mode or UFO_VISION)".into(),
            None,
        );
    }
    let worker = match ufo_vision::find_worker(settings.worker.as_deref()) {
        Ok(w) => w,
        Err(e) => {
            return (
                false,
                "text detection is off: no ufo-sight worker next to ufo or on PATH".into(),
                Some(format!("{e}")),
            )
        }
    };
    let check = tokio::process::Command::new(&worker)
        .arg("--check")
        .env("OMP_THREAD_LIMIT", "1")
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(10), check).await {
        Ok(Ok(out)) if out.status.success() => (
            true,
            format!(
                "text detection ready: {}",
                String::from_utf8_lossy(&out.stdout).trim()
            ),
            None,
        ),
        Ok(Ok(out)) => (
            false,
            format!("the worker {} cannot read", worker.display()),
            Some(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        ),
        Ok(Err(e)) => (
            false,
            format!("the worker {} does not start ({e})", worker.display()),
            Some(format!("install {}", ufo_vision::WORKER_INSTALL)),
        ),
        Err(_) => (
            false,
            format!(
                "the worker {} did not answer --check in 10 s",
                worker.display()
            ),
            Some("run it by hand with --check to see why".into()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_then_the_environment_then_the_flag() {
        let section = VisionSection {
            mode: Some(VisionMode::Off),
            worker: Some("/opt/ufo-sight".into()),
        };
        let none = |_: &str| None;
        let s = VisionSettings::resolve(section.clone(), &none, None).expect("file");
        assert_eq!(s.mode, VisionMode::Off);
        assert_eq!(s.worker, Some(PathBuf::from("/opt/ufo-sight")));
        let env = |k: &str| (k == "UFO_VISION").then(|| "Always".to_string());
        let s = VisionSettings::resolve(section.clone(), &env, None).expect("env");
        assert_eq!(s.mode, VisionMode::Always);
        let s = VisionSettings::resolve(section, &env, Some(VisionMode::Auto)).expect("flag");
        assert_eq!(s.mode, VisionMode::Auto);
        let s = VisionSettings::resolve(VisionSection::default(), &none, None).expect("default");
        assert_eq!(s.mode, VisionMode::Auto, "auto by default");
    }

    #[test]
    fn a_bad_mode_says_what_to_set() {
        let env = |_: &str| Some("sometimes".to_string());
        let e =
            VisionSettings::resolve(VisionSection::default(), &env, None).expect_err("not a mode");
        assert!(e.to_string().contains("auto, always or off"), "{e}");
    }

    #[test]
    fn off_has_no_sight() {
        let s = VisionSettings {
            mode: VisionMode::Off,
            worker: None,
        };
        assert!(s.sight().is_none());
    }
}
