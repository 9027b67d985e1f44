//! TLS for `ufo serve` (rustls with the ring provider): a given certificate and key, or a
//! self-signed certificate made on first start and kept; its SHA-256 fingerprint is what a
//! client pins. Also the client side of pinning ([`pinned_client_config`]).

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

/// Load a PEM certificate chain and private key.
pub fn load_pem(cert: &Path, key: &Path) -> Result<ServerTls, TlsError> {
    let read = |path: &Path, e: &dyn std::fmt::Display| TlsError::File {
        action: "read",
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| read(cert, &e))?
        .collect::<Result<_, _>>()
        .map_err(|e| read(cert, &e))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| read(key, &e))?;
    server_tls(chain, key)
}

/// The self-signed certificate kept in `dir` (`cert.pem`, `key.pem`), made on first use for
/// `names` (host names and addresses the certificate names).
pub fn self_signed(dir: &Path, names: &[String]) -> Result<ServerTls, TlsError> {
    let cert_path = dir.join("cert.pem");
    let key_path = dir.join("key.pem");
    if !cert_path.exists() || !key_path.exists() {
        let made = rcgen::generate_simple_self_signed(names.to_vec())
            .map_err(|e| TlsError::Generate(e.to_string()))?;
        write_private(dir, &key_path, made.key_pair.serialize_pem().as_bytes())?;
        write_private(dir, &cert_path, made.cert.pem().as_bytes())?;
    }
    load_pem(&cert_path, &key_path)
}

fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), TlsError> {
    let err = |e: std::io::Error| TlsError::File {
        action: "write",
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(err)?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(err)?;
    f.write_all(bytes).map_err(err)
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
}
