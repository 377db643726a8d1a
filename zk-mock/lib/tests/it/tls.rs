//! The secure client port (ZooKeeper's `secureClientPort`): TLS clients
//! reach the same server as plain ones; a client without an accepted
//! certificate, or one speaking plain ZooKeeper to the TLS port, gets no
//! session and disturbs nobody.

use std::sync::Arc;
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use zk_mock::client::RawClient;
use zk_mock::proto::{GetDataResponse, OpCode};
use zk_mock::{Tls, ZkMock};

use crate::support::{create_req, path_watch};

/// A CA, a server certificate for 127.0.0.1 and a client certificate, PEM.
struct Pki {
    ca: String,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
}

fn pki() -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let leaf = |names: Vec<String>| {
        let key = KeyPair::generate().unwrap();
        let cert = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        (cert.pem(), key.serialize_pem())
    };
    let (server_cert, server_key) = leaf(vec!["127.0.0.1".into(), "localhost".into()]);
    let (client_cert, client_key) = leaf(vec!["client".into()]);
    Pki {
        ca: ca.pem(),
        server_cert,
        server_key,
        client_cert,
        client_key,
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn der_certs(pem: &str) -> Vec<CertificateDer<'static>> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A TLS client trusting the CA, presenting the client certificate if asked to.
fn connector(pki: &Pki, with_client_cert: bool) -> tokio_rustls::TlsConnector {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in der_certs(&pki.ca) {
        roots.add(c).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = if with_client_cert {
        builder
            .with_client_auth_cert(
                der_certs(&pki.client_cert),
                PrivateKeyDer::from_pem_slice(pki.client_key.as_bytes()).unwrap(),
            )
            .unwrap()
    } else {
        builder.with_no_client_auth()
    };
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

async fn mock(pki: &Pki, require_client_cert: bool) -> ZkMock {
    let mut tls = Tls::from_pem(pki.server_cert.as_bytes(), pki.server_key.as_bytes()).unwrap();
    if require_client_cert {
        tls = tls.client_ca(pki.ca.as_bytes()).unwrap();
    }
    ZkMock::builder().tls(tls).start().await.unwrap()
}

async fn tls_client(zk: &ZkMock, pki: &Pki, with_client_cert: bool) -> std::io::Result<RawClient> {
    let addr = zk.secure_addr().expect("TLS is on");
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let stream = connector(pki, with_client_cert).connect(name, tcp).await?;
    let (c, resp) =
        RawClient::handshake_over(stream, &crate::support::new_session(10_000, Some(false)))
            .await?;
    resp.ok_or_else(|| std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "no session"))?;
    Ok(c)
}

#[tokio::test]
async fn tls_clients_share_the_server_with_plain_ones() {
    let pki = pki();
    let zk = mock(&pki, true).await;
    assert_ne!(zk.secure_addr(), Some(zk.addr()));
    assert_eq!(
        zk.secure_connect_string(),
        zk.secure_addr().map(|a| a.to_string())
    );

    let mut plain = RawClient::connect(zk.addr(), 10_000).await.unwrap();
    let r = plain
        .request(OpCode::Create, &create_req("/shared", Some(b"plain"), 0))
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);

    let mut secure = tls_client(&zk, &pki, true).await.unwrap();
    assert_ne!(secure.session_id, plain.session_id);
    // The TLS client reads what the plain one wrote, and its watch fires
    // for the plain one's change.
    let r = secure
        .request(OpCode::GetData, &path_watch("/shared", true))
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    assert_eq!(
        r.decode::<GetDataResponse>().unwrap().data.as_deref(),
        Some(&b"plain"[..])
    );
    let r = plain
        .request(
            OpCode::SetData,
            &zk_mock::proto::SetDataRequest {
                path: "/shared".into(),
                data: Some(bytes::Bytes::from_static(b"again")),
                version: -1,
            },
        )
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    secure.set_read_timeout(Duration::from_secs(10));
    let event = secure.next_event().await.unwrap().expect("a notification");
    assert_eq!(event.event.path, "/shared");
    assert!(secure.take_events().is_empty());

    // And the plain client sees the TLS client's ephemeral node.
    let r = secure
        .request(OpCode::Create, &create_req("/shared/eph", None, 1))
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    let r = plain
        .request(OpCode::Exists, &path_watch("/shared/eph", false))
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    assert_eq!(zk.snapshot().sessions.len(), 2);
}

#[tokio::test]
async fn without_a_client_certificate_the_handshake_fails_when_one_is_required() {
    let pki = pki();
    let zk = mock(&pki, true).await;
    let refused = tls_client(&zk, &pki, false).await;
    assert!(refused.is_err(), "a session without a client certificate");
    assert!(zk.snapshot().sessions.is_empty());
    // Nobody else is disturbed.
    let mut c = tls_client(&zk, &pki, true).await.unwrap();
    let r = c
        .request(OpCode::Exists, &path_watch("/", false))
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);

    // Without a client CA, none is asked for.
    let open = mock(&pki, false).await;
    tls_client(&open, &pki, false).await.unwrap();
}

#[tokio::test]
async fn plain_zookeeper_on_the_tls_port_is_closed_and_harms_nobody() {
    let pki = pki();
    let zk = mock(&pki, true).await;
    let mut ok = RawClient::connect(zk.addr(), 10_000).await.unwrap();
    // A plain handshake sent to the TLS port is not a ClientHello.
    let (mut wrong, resp) = RawClient::handshake_over(
        TcpStream::connect(zk.secure_addr().unwrap()).await.unwrap(),
        &crate::support::new_session(10_000, Some(false)),
    )
    .await
    .unwrap();
    assert!(resp.is_none(), "no ConnectResponse in plain text");
    assert!(wrong.read_frame().await.unwrap().is_none());
    // A TCP connection that never starts its handshake is simply held
    // until it gives up; the server goes on serving.
    let _idle = TcpStream::connect(zk.secure_addr().unwrap()).await.unwrap();
    let r = ok
        .request(OpCode::Exists, &path_watch("/", false))
        .await
        .unwrap();
    assert_eq!(r.header.err, 0);
    tls_client(&zk, &pki, true).await.unwrap();
    assert_eq!(zk.snapshot().sessions.len(), 2);
}

#[test]
fn bad_pem_is_a_configuration_error() {
    let e = Tls::from_pem(b"not a certificate", b"nor a key").unwrap_err();
    assert!(e.to_string().contains("TLS certificate"), "{e}");
    let pki = pki();
    let e = Tls::from_pem(pki.server_cert.as_bytes(), b"-----BEGIN NOTHING-----").unwrap_err();
    assert!(e.to_string().contains("private key"), "{e}");
    // A key that is not the certificate's is refused when the mock starts.
    let other = KeyPair::generate().unwrap().serialize_pem();
    let tls = Tls::from_pem(pki.server_cert.as_bytes(), other.as_bytes()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let e = rt
        .block_on(ZkMock::builder().tls(tls).start())
        .expect_err("a mismatched key is refused");
    assert!(e.to_string().contains("certificate and key"), "{e}");
    let e = Tls::from_pem_files("/nonexistent/cert.pem", "/nonexistent/key.pem").unwrap_err();
    assert!(e.to_string().contains("/nonexistent/cert.pem"), "{e}");
}
