//! Shared helpers: starting mocks, connecting real and raw clients, bounded
//! waits, a severable TCP proxy, small record builders, and a minimal
//! HTTP/1.1 client for the admin interface.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use zk_mock::client::{Notification, RawClient, Reply};
use zk_mock::proto::{
    Acl, ConnectRequest, CreateRequest, GetDataResponse, OpCode, PathRequest, PathWatchRequest,
    SetDataRequest, Stat,
};
use zk_mock::ZkMock;
use zookeeper_client::{Acls, Client, CreateMode, CreateOptions, EventType, WatchedEvent};

/// Upper bound for anything that should happen "at once".
pub(crate) const QUICK: Duration = Duration::from_secs(5);

/// Installs a tracing subscriber once, filtered by `RUST_LOG` (silent by default).
pub(crate) fn init_tracing() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if std::env::var_os("RUST_LOG").is_some() {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
                .with_test_writer()
                .try_init();
        }
    });
}

/// A mock with default settings.
pub(crate) async fn start_mock() -> ZkMock {
    init_tracing();
    ZkMock::start().await
}

/// Awaits `f`, failing the test if it takes longer than `within`.
pub(crate) async fn with_timeout<F: Future>(within: Duration, what: &str, f: F) -> F::Output {
    match tokio::time::timeout(within, f).await {
        Ok(v) => v,
        Err(_) => panic!("timed out after {within:?} waiting for {what}"),
    }
}

/// A `zookeeper-client` session on `mock` (6 s session timeout, the crate default).
pub(crate) async fn connect(mock: &ZkMock) -> Client {
    connect_to(&mock.connect_string()).await
}

/// A `zookeeper-client` session on an arbitrary connect string.
pub(crate) async fn connect_to(cluster: &str) -> Client {
    init_tracing();
    with_timeout(QUICK, "zookeeper-client connect", Client::connect(cluster))
        .await
        .expect("zookeeper-client failed to connect")
}

/// A raw session with a 10 s timeout.
pub(crate) async fn raw(mock: &ZkMock) -> RawClient {
    init_tracing();
    RawClient::connect(mock.addr(), 10_000)
        .await
        .expect("raw connect")
}

pub(crate) fn persistent() -> CreateOptions<'static> {
    CreateMode::Persistent.with_acls(Acls::anyone_all())
}

/// Sends a four-letter word to `addr` and reads the answer up to the
/// close that ends it.
pub(crate) async fn four_letter(addr: SocketAddr, word: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(word).await.unwrap();
    let mut out = String::new();
    with_timeout(
        QUICK,
        "a four-letter word's answer",
        s.read_to_string(&mut out),
    )
    .await
    .unwrap();
    out
}

/// `n` clients of `mock`, connected one after another, each owning an
/// ephemeral node `/e{i}`.
pub(crate) async fn clients_with_ephemerals(mock: &ZkMock, n: usize) -> Vec<Client> {
    let mut clients = Vec::new();
    for i in 0..n {
        let c = connect(mock).await;
        c.create(&format!("/e{i}"), b"", &ephemeral())
            .await
            .unwrap();
        clients.push(c);
    }
    clients
}

pub(crate) fn ephemeral() -> CreateOptions<'static> {
    CreateMode::Ephemeral.with_acls(Acls::anyone_all())
}

pub(crate) fn sequential() -> CreateOptions<'static> {
    CreateMode::PersistentSequential.with_acls(Acls::anyone_all())
}

pub(crate) fn ephemeral_sequential() -> CreateOptions<'static> {
    CreateMode::EphemeralSequential.with_acls(Acls::anyone_all())
}

pub(crate) fn container() -> CreateOptions<'static> {
    CreateMode::Container.with_acls(Acls::anyone_all())
}

/// The node event `zookeeper-client` reports for a 3.8 server (no zxid).
pub(crate) fn node_event(event_type: EventType, path: &str) -> WatchedEvent {
    WatchedEvent::new(event_type, path)
}

// ---------------------------------------------------------------------------
// Raw-client record helpers.

/// Sends `bytes` (whole request frames) on `client` without waiting for
/// replies, and returns once the server has read `frames` more requests
/// (each is handled under the state lock as it is read: a read request
/// has been judged).
pub(crate) async fn send_until_read(
    mock: &ZkMock,
    client: &mut RawClient,
    bytes: &[u8],
    frames: u64,
) {
    let received = mock.metrics().packets_received;
    client.send_raw(bytes).await.unwrap();
    with_timeout(QUICK, "the server to read the requests", async {
        while mock.metrics().packets_received < received + frames {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

/// A new session's handshake (no session id, a zero password), as a raw
/// client sends it.
pub(crate) fn new_session(time_out: i32, read_only: Option<bool>) -> ConnectRequest {
    ConnectRequest {
        time_out,
        passwd: Some(Bytes::from_static(&[0; 16])),
        read_only,
        ..Default::default()
    }
}

/// One request's frame (length prefix, header, body), to send with others
/// in one write.
pub(crate) fn request_bytes(xid: i32, op: i32, body: &[u8]) -> Vec<u8> {
    let mut b = bytes::BytesMut::new();
    zk_mock::codec::Record::encode(&zk_mock::proto::RequestHeader { xid, op_type: op }, &mut b);
    b.extend_from_slice(body);
    let mut v = (b.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(&b);
    v
}

pub(crate) fn create_req(path: &str, data: Option<&[u8]>, flags: i32) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: data.map(Bytes::copy_from_slice),
        acl: Acl::open_shared(),
        flags,
    }
}

pub(crate) fn path_watch(path: &str, watch: bool) -> PathWatchRequest {
    PathWatchRequest {
        path: path.into(),
        watch,
    }
}

pub(crate) fn path_req(path: &str) -> PathRequest {
    PathRequest { path: path.into() }
}

/// create (op 1) through a raw client; returns the reply.
pub(crate) async fn raw_create(
    c: &mut RawClient,
    path: &str,
    data: Option<&[u8]>,
    flags: i32,
) -> Reply {
    c.request(OpCode::Create, &create_req(path, data, flags))
        .await
        .expect("raw create")
}

/// Reads the reply to the one create each client sent, in the clients'
/// order: each must have succeeded; the paths it created.
pub(crate) async fn created_paths(clients: &mut [RawClient]) -> Vec<String> {
    let mut paths = Vec::new();
    for c in clients {
        let reply = c.next_reply().await.unwrap().expect("the create's reply");
        assert_eq!(reply.header.err, 0);
        let created: zk_mock::proto::CreateResponse = reply.decode().unwrap();
        paths.push(created.path);
    }
    paths
}

/// create that must succeed.
pub(crate) async fn raw_create_ok(c: &mut RawClient, path: &str, flags: i32) {
    let r = raw_create(c, path, Some(b""), flags).await;
    assert_eq!(r.header.err, 0, "create {path}");
}

pub(crate) async fn raw_set(c: &mut RawClient, path: &str, data: &[u8], version: i32) -> Reply {
    c.request(
        OpCode::SetData,
        &SetDataRequest {
            path: path.into(),
            data: Some(Bytes::copy_from_slice(data)),
            version,
        },
    )
    .await
    .expect("raw setData")
}

pub(crate) async fn raw_get(c: &mut RawClient, path: &str, watch: bool) -> Reply {
    c.request(OpCode::GetData, &path_watch(path, watch))
        .await
        .expect("raw getData")
}

pub(crate) async fn raw_stat(c: &mut RawClient, path: &str) -> Stat {
    let r = raw_get(c, path, false).await;
    assert_eq!(r.header.err, 0, "getData {path}");
    r.decode::<GetDataResponse>().unwrap().stat
}

pub(crate) async fn raw_exists(c: &mut RawClient, path: &str, watch: bool) -> Reply {
    c.request(OpCode::Exists, &path_watch(path, watch))
        .await
        .expect("raw exists")
}

/// Sends a cheap read and returns the notifications that arrived before its
/// reply. The server queues every event caused by earlier writes before this
/// reply, so this is an exact barrier, not a sleep.
pub(crate) async fn events_after_barrier(c: &mut RawClient) -> Vec<Notification> {
    let r = c
        .request(OpCode::Exists, &path_watch("/", false))
        .await
        .expect("barrier exists");
    assert_eq!(r.header.err, 0);
    c.take_events()
}

/// (type, path) pairs of notifications, for compact assertions.
pub(crate) fn kinds(events: &[Notification]) -> Vec<(i32, String)> {
    events
        .iter()
        .map(|n| (n.event.event_type, n.event.path.clone()))
        .collect()
}

// ---------------------------------------------------------------------------
// A TCP proxy whose connections can be cut and whose new connections can be
// held, to force a real client through a reconnect at a chosen moment.

#[derive(Debug)]
pub(crate) struct Proxy {
    addr: SocketAddr,
    open: watch::Sender<bool>,
    conns: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
}

impl Proxy {
    pub(crate) async fn start(target: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (open, open_rx) = watch::channel(true);
        let conns: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let conns2 = conns.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                let mut gate = open_rx.clone();
                let task = tokio::spawn(async move {
                    // Hold the connection (unanswered) while the gate is closed.
                    if gate.wait_for(|open| *open).await.is_err() {
                        return;
                    }
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                });
                conns2.lock().unwrap().push(task);
            }
        });
        Proxy {
            addr,
            open,
            conns,
            accept,
        }
    }

    pub(crate) fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// Holds new connections until [`resume`](Self::resume) and cuts every current one.
    pub(crate) fn pause_and_cut(&self) {
        self.open.send_replace(false);
        for t in self.conns.lock().unwrap().drain(..) {
            t.abort();
        }
    }

    pub(crate) fn resume(&self) {
        self.open.send_replace(true);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        for t in self.conns.lock().unwrap().drain(..) {
            t.abort();
        }
    }
}

/// addWatch (106) through a raw client: the error code and the body.
pub(crate) async fn raw_add_watch(c: &mut RawClient, path: &str, mode: i32) -> (i32, Vec<u8>) {
    let r = c
        .request(
            OpCode::AddWatch,
            &zk_mock::proto::AddWatchRequest {
                path: path.into(),
                mode,
            },
        )
        .await
        .unwrap();
    (r.header.err, r.body.to_vec())
}

/// One request on a fresh connection: (status, parsed JSON body or Null).
pub(crate) async fn http(
    admin: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, Value) {
    http_as(admin, None, method, path, body).await.0
}

/// [`http`] with an `Authorization: Bearer` token; also returns the raw
/// response head.
pub(crate) async fn http_as(
    admin: SocketAddr,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> ((u16, Value), String) {
    let mut s = TcpStream::connect(admin).await.unwrap();
    let body = body.unwrap_or("");
    let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    let req = format!(
        "{method} {path} HTTP/1.1\r\nhost: localhost\r\n{auth}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    let status: u16 = text[9..12].parse().unwrap();
    let (head, payload) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let value = if payload.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(payload).unwrap_or(Value::String(payload.into()))
    };
    ((status, value), head.to_lowercase())
}
