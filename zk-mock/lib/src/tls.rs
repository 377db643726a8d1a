//! TLS on a second client port, as ZooKeeper's `secureClientPort` (Netty
//! with `ssl.keyStore`/`ssl.trustStore`): the same server, sessions and
//! tree behind both ports; only the transport differs.
//!
//! Certificates and keys are PEM. With a client CA the server requires a
//! client certificate signed by it (ZooKeeper's default `ssl.clientAuth=need`);
//! without one it asks for none. TLS 1.2 and 1.3, by rustls with the *ring*
//! provider.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio_rustls::rustls;
use tokio_rustls::TlsAcceptor;

use crate::core::Shared;
use crate::error::Error;

/// How long a client may take to finish the TLS handshake before the
/// connection is closed.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The secure port's certificate, key and, optionally, the CA its clients'
/// certificates must be signed by. Give it to
/// [`ZkMockBuilder::tls`](crate::ZkMockBuilder::tls).
///
/// ```no_run
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// use zk_mock::{Tls, ZkMock};
/// let tls = Tls::from_pem_files("server.pem", "server.key")?.client_ca_file("ca.pem")?;
/// let zk = ZkMock::builder().tls(tls).start().await?;
/// let secure = zk.secure_connect_string().expect("TLS is on");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Tls {
    cert_chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_ca: Option<Vec<CertificateDer<'static>>>,
}

impl Clone for Tls {
    fn clone(&self) -> Self {
        Tls {
            cert_chain: self.cert_chain.clone(),
            key: self.key.clone_key(),
            client_ca: self.client_ca.clone(),
        }
    }
}

fn pem_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Config(format!("TLS {what}: {e}"))
}

fn certs(what: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_error(what, e))?;
    if certs.is_empty() {
        return Err(pem_error(what, "no CERTIFICATE in the PEM"));
    }
    Ok(certs)
}

fn read(what: &str, path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| pem_error(what, format!("{}: {e}", path.display())))
}

impl Tls {
    /// A certificate chain (leaf first) and its private key (PKCS#8, PKCS#1
    /// or SEC1), both PEM.
    ///
    /// # Errors
    /// [`Error::Config`] if either holds no usable PEM item.
    pub fn from_pem(cert_chain: &[u8], key: &[u8]) -> Result<Tls, Error> {
        let cert_chain = certs("certificate", cert_chain)?;
        let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| pem_error("private key", e))?;
        Ok(Tls {
            cert_chain,
            key,
            client_ca: None,
        })
    }

    /// [`from_pem`](Self::from_pem) from files.
    ///
    /// # Errors
    /// [`Error::Config`] if a file cannot be read or holds no usable PEM item.
    pub fn from_pem_files(
        cert_chain: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Result<Tls, Error> {
        Tls::from_pem(
            &read("certificate", cert_chain.as_ref())?,
            &read("private key", key.as_ref())?,
        )
    }

    /// Require every client to present a certificate signed by one of these
    /// CA certificates (PEM), as ZooKeeper's `ssl.trustStore` with
    /// `ssl.clientAuth=need`.
    ///
    /// # Errors
    /// [`Error::Config`] if the PEM holds no certificate.
    pub fn client_ca(mut self, ca_pem: &[u8]) -> Result<Tls, Error> {
        self.client_ca = Some(certs("client CA", ca_pem)?);
        Ok(self)
    }

    /// [`client_ca`](Self::client_ca) from a file.
    ///
    /// # Errors
    /// As for [`client_ca`](Self::client_ca), or the file cannot be read.
    pub fn client_ca_file(self, ca: impl AsRef<Path>) -> Result<Tls, Error> {
        let pem = read("client CA", ca.as_ref())?;
        self.client_ca(&pem)
    }

    /// The acceptor for the secure port.
    pub(crate) fn acceptor(&self) -> Result<TlsAcceptor, Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| pem_error("protocol versions", e))?;
        let builder = match &self.client_ca {
            None => builder.with_no_client_auth(),
            Some(cas) => {
                let mut roots = rustls::RootCertStore::empty();
                for ca in cas {
                    roots
                        .add(ca.clone())
                        .map_err(|e| pem_error("client CA", e))?;
                }
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots),
                    provider.clone(),
                )
                .build()
                .map_err(|e| pem_error("client CA", e))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        // Not `with_single_cert`: it parses the certificate with webpki,
        // which refuses X.509 v1 certificates, and test CAs (kazoo's
        // harness among them) issue v1 server certificates that Java and
        // OpenSSL clients accept. The key must still match the certificate.
        let key = provider
            .key_provider
            .load_private_key(self.key.clone_key())
            .map_err(|e| pem_error("private key", e))?;
        let certified = rustls::sign::CertifiedKey::new(self.cert_chain.clone(), key);
        match certified.keys_match() {
            Err(e @ rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
                return Err(pem_error("certificate and key", e))
            }
            Err(e) => tracing::debug!(%e, "TLS certificate not checked against its key"),
            Ok(()) => {}
        }
        let config = builder.with_cert_resolver(Arc::new(OneCert(Arc::new(certified))));
        Ok(TlsAcceptor::from(Arc::new(config)))
    }
}

/// The one certificate the secure port presents, whatever the client asks.
#[derive(Debug)]
struct OneCert(Arc<rustls::sign::CertifiedKey>);

impl rustls::server::ResolvesServerCert for OneCert {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// Completes the TLS handshake of an accepted socket and serves it. A
/// failed or overlong handshake closes the socket; nothing reaches the
/// server's state before the handshake is done.
pub(crate) async fn serve(
    shared: Shared,
    acceptor: TlsAcceptor,
    socket: TcpStream,
    peer: SocketAddr,
    shutdown: watch::Receiver<bool>,
) {
    let _ = socket.set_nodelay(true);
    let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(socket)).await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(%peer, %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let (rd, wr) = tokio::io::split(stream);
    crate::handler::serve_io(shared, rd, wr, peer, 0, shutdown).await
}
