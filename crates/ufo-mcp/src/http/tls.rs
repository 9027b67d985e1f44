//! TLS for `ufo serve` (rustls with the ring provider): a given certificate and key, or a
//! self-signed certificate made on first start and kept; its SHA-256 fingerprint is what a
//! client pins. Also the client side of pinning ([`pinned_client_config`]).
//!
//! Files are handled as docs/serve.md ("TLS and the fingerprint") says: every certificate and
//! key is read only when it is a regular file (opened non-blocking, so a FIFO cannot hang the
//! start; checked on the opened file) and at most [`MAX_PEM_BYTES`]. The kept folder is 0700;
//! the key ufo makes is created exclusively, never through a link, mode 0600, and a kept key
//! that is a link or that others may read is refused.

use std::io::{Read as _, Write as _};
use std::os::unix::fs::{
    DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _, PermissionsExt as _,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::OFlag;

use sha2::{Digest as _, Sha256};
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

/// Errors setting up TLS.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or written.
    #[error("cannot {action} {path}: {reason}; check the path and its permissions")]
    File {
        /// read / write
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        reason: String,
    },
    /// The certificate could not be made.
    #[error("cannot make a self-signed certificate: {0}")]
    Generate(String),
    /// rustls refused the certificate or key.
    #[error("the TLS certificate or key is not usable: {0}; give a PEM certificate chain and its PEM private key")]
    Config(String),
    /// A certificate or key that is not a regular file.
    #[error("{0} is not a regular file (a FIFO, device or folder?); give the path of a PEM file")]
    NotRegular(PathBuf),
    /// A certificate or key over [`MAX_PEM_BYTES`].
    #[error(
        "{0} is larger than 1 MiB, far more than a PEM certificate chain or key; check the path"
    )]
    TooLarge(PathBuf),
    /// The kept key (`--tls`) is a symbolic link.
    #[error(
        "the kept TLS key {path} is a symbolic link; ufo uses only a key it made itself: remove \
         the folder {dir} to make a new certificate (clients then pin the new fingerprint)"
    )]
    KeyLink {
        /// The key file.
        path: PathBuf,
        /// Its folder.
        dir: PathBuf,
    },
    /// The kept key (`--tls`) may be read by others.
    #[error(
        "the kept TLS key {0} may be read by other users; run `chmod 600 {0}`, or remove its \
         folder to make a new certificate"
    )]
    KeyExposed(PathBuf),
    /// A fingerprint that is not 32 bytes of hex.
    #[error("invalid fingerprint {0:?}: give the 64 hex digits of the SHA-256 fingerprint (colons allowed)")]
    BadFingerprint(String),
}

/// A certificate chain and key ready to serve, with the leaf's fingerprint.
pub struct ServerTls {
    /// The rustls configuration (HTTP/1.1 only).
    pub config: Arc<rustls::ServerConfig>,
    /// SHA-256 of the leaf certificate (DER).
    pub fingerprint: [u8; 32],
}

/// Largest certificate or key file read.
pub const MAX_PEM_BYTES: u64 = 1 << 20;

/// Load a PEM certificate chain and private key (links followed: certbot's `live/` folder
/// holds links; each must be a regular file of at most [`MAX_PEM_BYTES`]).
pub fn load_pem(cert: &Path, key: &Path) -> Result<ServerTls, TlsError> {
    let cert_pem = read_pem(cert, Kind::Given)?;
    let key_pem = read_pem(key, Kind::Given)?;
    parse_pem(cert, &cert_pem, key, &key_pem)
}

fn parse_pem(
    cert: &Path,
    cert_pem: &[u8],
    key: &Path,
    key_pem: &[u8],
) -> Result<ServerTls, TlsError> {
    let read = |path: &Path, e: &dyn std::fmt::Display| TlsError::File {
        action: "read",
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| read(cert, &e))?;
    let key_der = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| read(key, &e))?;
    server_tls(chain, key_der)
}

/// Whose file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A path the person gave: links are followed.
    Given,
    /// The key ufo made and keeps: never through a link, readable by its owner only.
    KeptKey,
}

/// The bytes of a PEM file: opened non-blocking (a FIFO opens at once instead of waiting for
/// a writer), then refused unless the opened file is a regular one of at most
/// [`MAX_PEM_BYTES`]; a kept key also unless it is no link and mode 0600 or stricter.
fn read_pem(path: &Path, kind: Kind) -> Result<Vec<u8>, TlsError> {
    let io = |e: std::io::Error| TlsError::File {
        action: "read",
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mut flags = OFlag::O_NONBLOCK;
    if kind == Kind::KeptKey {
        flags |= OFlag::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(path)
        .map_err(|e| match (kind, e.raw_os_error()) {
            (Kind::KeptKey, Some(code)) if code == Errno::ELOOP as i32 => TlsError::KeyLink {
                path: path.to_path_buf(),
                dir: path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            },
            _ => io(e),
        })?;
    let meta = file.metadata().map_err(io)?;
    if !meta.file_type().is_file() {
        return Err(TlsError::NotRegular(path.to_path_buf()));
    }
    if kind == Kind::KeptKey && meta.mode() & 0o077 != 0 {
        return Err(TlsError::KeyExposed(path.to_path_buf()));
    }
    if meta.len() > MAX_PEM_BYTES {
        return Err(TlsError::TooLarge(path.to_path_buf()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_PEM_BYTES {
        return Err(TlsError::TooLarge(path.to_path_buf()));
    }
    Ok(bytes)
}

/// The self-signed certificate kept in `dir` (`cert.pem`, `key.pem`), made on first use for
/// `names` (host names and addresses the certificate names). The folder is made (or set)
/// 0700. When either file is missing, both are made anew: what an earlier start left is
/// removed first (a link is removed, never followed) and the new files are created
/// exclusively without following links, mode 0600. A kept key that is a link, or that
/// others may read, is refused.
pub fn self_signed(dir: &Path, names: &[String]) -> Result<ServerTls, TlsError> {
    private_dir(dir)?;
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    let present = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if !present(&cert_path) || !present(&key_path) {
        let made = rcgen::generate_simple_self_signed(names.to_vec())
            .map_err(|e| TlsError::Generate(e.to_string()))?;
        for path in [&key_path, &cert_path] {
            match std::fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(TlsError::File {
                        action: "replace",
                        path: path.clone(),
                        reason: e.to_string(),
                    })
                }
            }
        }
        write_new(&key_path, made.key_pair.serialize_pem().as_bytes())?;
        write_new(&cert_path, made.cert.pem().as_bytes())?;
    }
    let key_pem = read_pem(&key_path, Kind::KeptKey)?;
    let cert_pem = read_pem(&cert_path, Kind::Given)?;
    parse_pem(&cert_path, &cert_pem, &key_path, &key_pem)
}

/// `dir` made if needed, a folder (not a link to one) and mode 0700.
fn private_dir(dir: &Path) -> Result<(), TlsError> {
    let err = |e: std::io::Error| TlsError::File {
        action: "make the folder",
        path: dir.to_path_buf(),
        reason: e.to_string(),
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(err)?;
    let meta = std::fs::symlink_metadata(dir).map_err(err)?;
    if !meta.file_type().is_dir() {
        return Err(err(std::io::Error::other(
            "it is not a folder (a link?); remove it and start again",
        )));
    }
    if meta.mode() & 0o777 != 0o700 {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(err)?;
    }
    Ok(())
}

/// Create `path` (it must not exist, not even as a link), mode 0600, holding `bytes`.
fn write_new(path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    let err = |e: std::io::Error| TlsError::File {
        action: "write",
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(OFlag::O_NOFOLLOW.bits())
        .open(path)
        .map_err(err)?;
    f.write_all(bytes).map_err(err)?;
    f.sync_all().map_err(err)
}

fn server_tls(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<ServerTls, TlsError> {
    let leaf = chain
        .first()
        .ok_or_else(|| TlsError::Config("the certificate file holds no certificate".into()))?;
    let fingerprint: [u8; 32] = Sha256::digest(leaf.as_ref()).into();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| TlsError::Config(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(ServerTls {
        config: Arc::new(config),
        fingerprint,
    })
}

/// `AB:CD:...`: the form `ufo serve` prints a fingerprint in.
pub fn format_fingerprint(fp: &[u8; 32]) -> String {
    fp.iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Parse a fingerprint written as 64 hex digits, with or without colons.
pub fn parse_fingerprint(text: &str) -> Result<[u8; 32], TlsError> {
    let digits: String = text.chars().filter(|c| *c != ':').collect();
    let bad = || TlsError::BadFingerprint(text.to_string());
    if digits.len() != 64 {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(digits.get(2 * i..2 * i + 2).ok_or_else(bad)?, 16)
            .map_err(|_| bad())?;
    }
    Ok(out)
}

/// A client configuration that trusts exactly the server certificate with this SHA-256
/// fingerprint (names and dates are not checked: the pin is the trust); the handshake's
/// signatures are still verified.
pub fn pinned_client_config(fingerprint: [u8; 32]) -> rustls::ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = Arc::new(PinnedVerifier {
        fingerprint,
        provider: provider.clone(),
    });
    // the ring provider's defaults are always valid
    #[allow(clippy::expect_used)]
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("the ring provider supports the default TLS versions");
    let mut config = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

#[derive(Debug)]
struct PinnedVerifier {
    fingerprint: [u8; 32],
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl rustls::client::danger::ServerCertVerifier for PinnedVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let got: [u8; 32] = Sha256::digest(end_entity.as_ref()).into();
        if got == self.fingerprint {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!(
                "the server's certificate fingerprint {} is not the pinned one",
                format_fingerprint(&got)
            )))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_signed_is_made_once_and_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = self_signed(dir.path(), &["localhost".into()]).expect("first");
        let b = self_signed(dir.path(), &["localhost".into()]).expect("second");
        assert_eq!(a.fingerprint, b.fingerprint);
        let printed = format_fingerprint(&a.fingerprint);
        assert_eq!(parse_fingerprint(&printed).expect("parse"), a.fingerprint);
        assert!(parse_fingerprint("AB:CD").is_err());
    }

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).expect("meta").mode() & 0o777
    }

    #[test]
    fn the_key_is_made_0600_in_a_0700_folder_and_never_through_a_link() {
        let home = tempfile::tempdir().expect("tempdir");
        let dir = home.path().join("tls");
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let target = home.path().join("elsewhere.pem");
        std::fs::write(&target, "untouched").expect("write");
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        std::os::unix::fs::symlink(&target, dir.join("key.pem")).expect("symlink");
        // a dangling link as the certificate, too
        std::os::unix::fs::symlink(home.path().join("nothing"), dir.join("cert.pem"))
            .expect("symlink");
        let made = self_signed(&dir, &["localhost".into()]);
        // both links were there: a kept key that is a link is refused, nothing written
        assert!(
            matches!(made, Err(TlsError::KeyLink { .. })),
            "{:?}",
            made.err()
        );
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "untouched");
        // with the certificate gone the pair is made anew, the link replaced, not followed
        std::fs::remove_file(dir.join("cert.pem")).expect("rm");
        self_signed(&dir, &["localhost".into()]).expect("made");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "untouched");
        assert!(std::fs::symlink_metadata(dir.join("key.pem"))
            .expect("meta")
            .file_type()
            .is_file());
        assert_eq!(mode(&dir.join("key.pem")), 0o600);
        assert_eq!(mode(&dir.join("cert.pem")), 0o600);
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_kept_key_others_may_read_is_refused_saying_how_to_fix_it() {
        let home = tempfile::tempdir().expect("tempdir");
        let dir = home.path().join("tls");
        self_signed(&dir, &["localhost".into()]).expect("made");
        let key = dir.join("key.pem");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        let e = self_signed(&dir, &["localhost".into()])
            .err()
            .expect("refused");
        assert!(matches!(e, TlsError::KeyExposed(_)), "{e}");
        assert!(e.to_string().contains("chmod 600"), "{e}");
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        self_signed(&dir, &["localhost".into()]).expect("kept again");
    }

    /// Run `f` on another thread; its result, or a failure when it takes more than 10 s (a
    /// FIFO opened for reading without O_NONBLOCK waits for a writer forever).
    fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("finished within 10 s")
    }

    #[test]
    fn given_files_must_be_regular_and_at_most_1_mib() {
        let home = tempfile::tempdir().expect("tempdir");
        let dir = home.path().join("tls");
        self_signed(&dir, &["localhost".into()]).expect("made");
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let fifo = home.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("mkfifo");
        let big = home.path().join("big.pem");
        std::fs::File::create(&big)
            .and_then(|f| f.set_len(MAX_PEM_BYTES + 1))
            .expect("big");
        let zero = PathBuf::from("/dev/zero");
        let cases = [
            (fifo.clone(), key.clone(), "fifo"),
            (cert.clone(), zero, "zero"),
            (cert.clone(), big, "big"),
            (home.path().to_path_buf(), key.clone(), "folder"),
        ];
        for (c, k, what) in cases {
            let e = bounded(move || load_pem(&c, &k).err()).expect(what);
            match what {
                "big" => assert!(matches!(e, TlsError::TooLarge(_)), "{what}: {e}"),
                _ => assert!(matches!(e, TlsError::NotRegular(_)), "{what}: {e}"),
            }
        }
        // a link to a regular file is followed for a given path
        let link = home.path().join("live.pem");
        std::os::unix::fs::symlink(&cert, &link).expect("symlink");
        load_pem(&link, &key).expect("a link to the certificate");
    }
}
