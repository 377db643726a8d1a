//! The ensemble, judged against a real 3-server ZooKeeper 3.8.0 ensemble on
//! loopback (`QuorumPeerMain` from Debian's jars): the same steps against a
//! fresh real ensemble and a fresh `ZkMock::ensemble(3)`, each written down as
//! a transcript of what a client observes (answers, error codes, closed
//! connections, relative zxids), and the transcripts compared line by line.
//! Servers are chosen by role (the leader, a follower), never by index. A
//! single server's kill and restart are judged the same way, against a real
//! standalone server (`ZooKeeperServerMain`) restarted on its data directory.
//!
//! Lag is mock-only (no real ensemble can be made to lag on demand), so it is
//! tested in `tests/it/ensemble.rs`, not here.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use zk_mock::client::{RawClient, Reply};
use zk_mock::codec::Record;
use zk_mock::proto::{
    ConnectRequest, CreateRequest, OpCode, PathRequest, PathWatchRequest, StatResponse,
};
use zk_mock::real::{RealEnsemble, RealZk, RealZkBuilder};
use zk_mock::ZkMock;

/// What a case needs of an ensemble, real or mock.
trait Ensemble {
    fn addr(&self, i: usize) -> SocketAddr;
    fn leader(&self) -> usize;
    fn kill(&mut self, i: usize);
    /// Starts server `i` again; returns once it serves if a quorum is there.
    fn restart(&mut self, i: usize, wait: bool);
    /// Server `i`'s `server.N=...` line with this role, for a reconfig.
    fn server_line(&self, i: usize, role: &str) -> String;
    /// Cuts server `i` off from the others, its sessions and connections
    /// kept: a paused JVM (SIGSTOP) for a real server, a partition for the
    /// mock's.
    fn cut_off(&mut self, i: usize);
    /// Ends [`cut_off`](Ensemble::cut_off).
    fn reconnect(&mut self, i: usize);
}

struct Real(RealEnsemble);

impl Ensemble for Real {
    fn addr(&self, i: usize) -> SocketAddr {
        self.0.addr(i)
    }
    fn leader(&self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(l) = self.0.leader() {
                return l;
            }
            assert!(Instant::now() < deadline, "no leader in the real ensemble");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    fn kill(&mut self, i: usize) {
        self.0.kill(i);
    }
    fn restart(&mut self, i: usize, wait: bool) {
        if wait {
            self.0.restart(i).unwrap_or_else(|e| panic!("{e}"));
        } else {
            self.0.spawn_again(i).unwrap_or_else(|e| panic!("{e}"));
        }
    }
    fn server_line(&self, i: usize, role: &str) -> String {
        self.0.server_line(i, role)
    }
    fn cut_off(&mut self, i: usize) {
        assert!(self.0.pause(i), "server {i}'s JVM paused");
    }
    fn reconnect(&mut self, i: usize) {
        assert!(self.0.resume(i), "server {i}'s JVM resumed");
    }
}

/// One real server in standalone mode (`ZooKeeperServerMain`), killed and
/// restarted on its data directory.
struct RealStandalone(RealZk);

impl Ensemble for RealStandalone {
    fn addr(&self, _: usize) -> SocketAddr {
        self.0.addr()
    }
    fn leader(&self) -> usize {
        0
    }
    fn kill(&mut self, _: usize) {
        self.0.kill();
    }
    fn restart(&mut self, _: usize, _wait: bool) {
        self.0.restart().unwrap_or_else(|e| panic!("{e}"));
    }
    fn server_line(&self, _: usize, _: &str) -> String {
        unreachable!("a standalone server has no server.N line")
    }
    fn cut_off(&mut self, _: usize) {
        unreachable!("a standalone server has no quorum to be cut off from")
    }
    fn reconnect(&mut self, _: usize) {
        unreachable!("a standalone server has no quorum to be cut off from")
    }
}

struct Mock(ZkMock);

impl Ensemble for Mock {
    fn addr(&self, i: usize) -> SocketAddr {
        self.0.server(i).addr()
    }
    fn leader(&self) -> usize {
        self.0.leader()
    }
    fn kill(&mut self, i: usize) {
        assert!(self.0.server(i).kill());
    }
    fn restart(&mut self, i: usize, _wait: bool) {
        assert!(self.0.server(i).restart().unwrap());
    }
    fn server_line(&self, i: usize, role: &str) -> String {
        mock_server_line(self.0.server(i).addr(), i, role)
    }
    fn cut_off(&mut self, i: usize) {
        assert!(self.0.server(i).partition());
    }
    fn reconnect(&mut self, i: usize) {
        assert!(self.0.server(i).heal());
    }
}

/// A mock server's line: its client address, and quorum and election
/// ports it does not have (a line must name them).
fn mock_server_line(addr: SocketAddr, i: usize, role: &str) -> String {
    format!(
        "server.{}=127.0.0.1:{}:{}:{role};{addr}",
        i + 1,
        20_000 + i,
        21_000 + i
    )
}

/// The settings a case needs on both ensembles.
#[derive(Clone, Copy, PartialEq)]
enum With {
    Defaults,
    ReadOnlyMode,
    /// Read-only mode with local sessions (`localSessionsEnabled`): a
    /// read-only server makes a new session local.
    ReadOnlyLocalSessions,
    /// reconfigEnabled, and the super user `super:test`.
    Reconfig,
    /// As `Reconfig`, with server 1 the only participant and servers 2
    /// and 3 observers that only their own zoo.cfg names
    /// (`standaloneEnabled=false`).
    Observers,
    /// One server, standalone.
    Standalone,
}

const SUPER_DIGEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";

fn real_ensemble(with: With) -> Box<dyn Ensemble> {
    let mut b = RealZkBuilder::default().tick_time(500);
    match with {
        With::Standalone => {
            return Box::new(RealStandalone(b.start().unwrap_or_else(|e| panic!("{e}"))))
        }
        With::Defaults => {}
        With::ReadOnlyMode => b = b.jvm_arg("-Dreadonlymode.enabled=true"),
        With::ReadOnlyLocalSessions => {
            b = b
                .jvm_arg("-Dreadonlymode.enabled=true")
                .cfg("localSessionsEnabled=true")
        }
        With::Reconfig | With::Observers => {
            // A reconfig that removes the leader hands over to a designated
            // leader (`Leader.getDesignatedLeader`), and the followers
            // connect to it at once. A follower gives up after five tries
            // `leaderConnectDelayDuringRetryMs` apart (100 ms by default),
            // then an election follows initLimit later and the highest id
            // wins; a designated leader whose JVM takes more than half a
            // second to bind, as it can on a loaded 2-core machine, loses
            // the hand-over. A second between tries keeps the follower
            // trying for the whole initLimit (5 s), so the hand-over the
            // case compares is the one the real server makes.
            b = b
                .cfg("reconfigEnabled=true")
                .jvm_arg("-Dzookeeper.leaderConnectDelayDuringRetryMs=1000")
                .jvm_arg(format!(
                    "-Dzookeeper.DigestAuthenticationProvider.superDigest={SUPER_DIGEST}"
                ))
        }
    }
    let participants: &[usize] = if with == With::Observers {
        b = b.cfg("standaloneEnabled=false");
        &[0]
    } else {
        &[0, 1, 2]
    };
    Box::new(Real(
        RealEnsemble::start_with_participants(3, participants, b).unwrap_or_else(|e| panic!("{e}")),
    ))
}

async fn mock_ensemble(with: With) -> Box<dyn Ensemble> {
    let mut b = ZkMock::builder()
        .servers(if with == With::Standalone { 1 } else { 3 })
        .tick_time(500)
        .read_only_mode(matches!(
            with,
            With::ReadOnlyMode | With::ReadOnlyLocalSessions
        ))
        .local_sessions(with == With::ReadOnlyLocalSessions)
        .reconfig_enabled(matches!(with, With::Reconfig | With::Observers))
        .super_digest(SUPER_DIGEST);
    if with == With::Observers {
        let fake: SocketAddr = "127.0.0.1:4001".parse().unwrap();
        b = b.membership([mock_server_line(fake, 0, "participant")]);
    }
    Box::new(Mock(b.start().await.unwrap()))
}

/// Runs `case` on a fresh real ensemble and a fresh mock ensemble and
/// compares what the client saw.
fn judge<F>(name: &str, with: With, case: F)
where
    F: for<'a> Fn(
        &'a mut dyn Ensemble,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Vec<String>> + 'a>>,
{
    if !RealZk::available() {
        panic!(
            "the ensemble conformance cases need Java and ZooKeeper's jars (Debian's `zookeeper`)"
        );
    }
    let rt = crate::runtime();
    let real = rt.block_on(async {
        let mut e = real_ensemble(with);
        case(&mut *e).await
    });
    let mock = rt.block_on(async {
        let mut e = mock_ensemble(with).await;
        case(&mut *e).await
    });
    let width = real.iter().map(String::len).max().unwrap_or(0);
    let mut table = String::new();
    for i in 0..real.len().max(mock.len()) {
        let (r, m) = (
            real.get(i).map_or("<nothing>", String::as_str),
            mock.get(i).map_or("<nothing>", String::as_str),
        );
        let mark = if r == m { ' ' } else { '!' };
        table.push_str(&format!("{mark} {r:<width$} | {m}\n"));
    }
    if crate::print_all() || real != mock {
        println!("=== {name}: real ensemble | zk-mock ensemble\n{table}");
    }
    assert_eq!(
        real, mock,
        "{name}: the mock's ensemble differs from the real one:\n{table}"
    );
}

fn connect_req(
    session: i64,
    passwd: Bytes,
    last_zxid: i64,
    timeout: i32,
    read_only: bool,
) -> ConnectRequest {
    ConnectRequest {
        time_out: timeout,
        last_zxid_seen: last_zxid,
        session_id: session,
        passwd: Some(passwd),
        read_only: Some(read_only),
        ..Default::default()
    }
}

fn zeros() -> Bytes {
    Bytes::from_static(&[0; 16])
}

/// Re-attaches `c`'s session on `to`: "same session" or what happened.
async fn reattach(c: &RawClient, to: SocketAddr, timeout: i32) -> (Option<RawClient>, String) {
    let req = connect_req(c.session_id, c.passwd.clone(), c.last_zxid, timeout, false);
    match RawClient::handshake(to, &req).await {
        Ok((n, Some(resp))) if resp.session_id == c.session_id => (
            Some(n),
            format!("re-attached: same session, timeout {}", resp.time_out),
        ),
        Ok((_, Some(resp))) => (
            None,
            format!("re-attach answered session {:#x}", resp.session_id),
        ),
        Ok((_, None)) => (None, "re-attach: closed with no answer".into()),
        Err(e) => (None, format!("re-attach: {}", e.kind())),
    }
}

fn create(path: &str, flags: i32) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: Some(Bytes::from_static(b"x")),
        acl: zk_mock::proto::Acl::open_shared(),
        flags,
    }
}

/// What a connection whose server was killed reads next: "closed", or "a frame".
async fn after_kill(c: &mut RawClient) -> &'static str {
    c.set_read_timeout(Duration::from_secs(5));
    match c.read_frame().await {
        Ok(None) | Err(_) => "closed",
        Ok(Some(_)) => "a frame",
    }
}

/// Whether `path` exists, read on `c`, and is an ephemeral node of `session`.
async fn ephemeral_of(c: &mut RawClient, path: &str, session: i64) -> String {
    let r = c
        .request(
            OpCode::Exists,
            &PathWatchRequest {
                path: path.into(),
                watch: false,
            },
        )
        .await
        .unwrap();
    let owner = r.decode::<StatResponse>().map(|s| s.stat.ephemeral_owner);
    format!(
        "the ephemeral: err {}, owned by the session: {}",
        r.header.err,
        owner.is_ok_and(|o| o == session)
    )
}

/// A request's outcome: its error code, or how the connection ended.
async fn outcome(c: &mut RawClient, op: OpCode, body: &[u8]) -> String {
    c.set_read_timeout(Duration::from_secs(5));
    answer(c.request_raw(op as i32, body).await)
}

/// What a request's reply (or its absence) says, as [`outcome`] words it.
fn answer(r: std::io::Result<Reply>) -> String {
    match r {
        Ok(r) => format!("err {}", r.header.err),
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => "no answer".into(),
        Err(_) => "connection closed, no answer".into(),
    }
}

fn followers(e: &dyn Ensemble) -> (usize, usize, usize) {
    let l = e.leader();
    ((l + 1) % 3, (l + 2) % 3, l)
}

#[test]
fn failover_after_a_server_is_killed() {
    judge("failover", With::Defaults, |e| {
        Box::pin(async move {
            let mut t = Vec::new();
            let (f, g, _) = followers(e);
            let mut c = RawClient::connect(e.addr(f), 6000).await.unwrap();
            let eph = create("/e", 1);
            t.push(format!(
                "create ephemeral on a follower: {}",
                outcome(&mut c, OpCode::Create, &eph.to_bytes()).await
            ));
            e.kill(f);
            t.push(format!(
                "its connection after the kill: {}",
                after_kill(&mut c).await
            ));
            let (n, line) = reattach(&c, e.addr(g), 6000).await;
            t.push(format!("on the other follower: {line}"));
            let mut n = n.unwrap();
            t.push(ephemeral_of(&mut n, "/e", c.session_id).await);
            e.restart(f, true);
            let (_, line) = reattach(&n, e.addr(f), 6000).await;
            t.push(format!("back on the restarted server: {line}"));
            t
        })
    });
}

/// A standalone server killed, down for longer than a session's timeout, and
/// restarted on its data: the client's connection closes; once `restart`
/// returns the server answers at once (no election), the session re-attaches
/// with its ephemeral node, and the next zxids follow on in the same epoch.
#[test]
fn a_standalone_server_restarts_with_its_sessions_in_the_same_epoch() {
    judge("standalone restart", With::Standalone, |e| {
        Box::pin(async move {
            let mut t = Vec::new();
            let mut c = RawClient::connect(e.addr(0), 2000).await.unwrap();
            t.push(format!(
                "create ephemeral: {}",
                outcome(&mut c, OpCode::Create, &create("/e", 1).to_bytes()).await
            ));
            let base = c.last_zxid;
            e.kill(0);
            t.push(format!(
                "its connection after the kill: {}",
                after_kill(&mut c).await
            ));
            // Down for longer than the session's timeout: a server that is
            // not running expires nothing.
            tokio::time::sleep(Duration::from_secs(3)).await;
            e.restart(0, true);
            let (n, line) = reattach(&c, e.addr(0), 2000).await;
            t.push(format!("right after the restart: {line}"));
            let Some(mut n) = n else {
                return t;
            };
            t.push(ephemeral_of(&mut n, "/e", c.session_id).await);
            let r = n.request(OpCode::Create, &create("/p", 0)).await.unwrap();
            t.push(format!(
                "a create: err {}, zxid {:+} from the last before the kill",
                r.header.err,
                r.header.zxid - base
            ));
            let mut fresh = RawClient::connect(e.addr(0), 6000).await.unwrap();
            let r = fresh
                .request(OpCode::Create, &create("/q", 0))
                .await
                .unwrap();
            t.push(format!(
                "a new session's create: err {}, zxid {:+}",
                r.header.err,
                r.header.zxid - base
            ));
            t
        })
    });
}

#[test]
fn a_session_moves_and_its_old_connection_meets_sessionmoved() {
    judge("session move", With::Defaults, |e| {
        Box::pin(async move {
            let mut t = Vec::new();
            let (f, g, l) = followers(e);
            // Moved from a follower: it still reads; a write closes it.
            let mut old = RawClient::connect(e.addr(f), 6000).await.unwrap();
            let (new, line) = reattach(&old, e.addr(g), 9000).await;
            t.push(format!("follower to follower: {line}"));
            let mut new = new.unwrap();
            let get = PathWatchRequest {
                path: "/".into(),
                watch: false,
            }
            .to_bytes();
            t.push(format!(
                "old connection, getData: {}",
                outcome(&mut old, OpCode::GetData, &get).await
            ));
            t.push(format!(
                "old connection, ping: {}",
                outcome(&mut old, OpCode::Ping, &[]).await
            ));
            let a = new.request(OpCode::Create, &create("/a", 0)).await.unwrap();
            // The old connection's write takes an xid the new connection
            // never uses. A follower matches a commit to its own pending
            // write by session and xid (`CommitProcessor`): had the new
            // connection's next write the same xid, and reached its server
            // before the commit of the old write's error txn, that server
            // would take the error (SESSIONMOVED) as its answer and close the
            // new connection. Real clients never share a session between two
            // connections at once; the case is about the old one.
            old.set_read_timeout(Duration::from_secs(5));
            let old_create = old
                .request_with_xid(1000, OpCode::Create as i32, &create("/x", 0).to_bytes())
                .await;
            t.push(format!("old connection, create: {}", answer(old_create)));
            let b = new.request(OpCode::Create, &create("/b", 0)).await.unwrap();
            t.push(format!(
                "zxids the old create took: {}",
                b.header.zxid - a.header.zxid - 1
            ));
            // Moved from the leader: even a read closes it, and takes no zxid.
            let mut old = RawClient::connect(e.addr(l), 6000).await.unwrap();
            let (new, line) = reattach(&old, e.addr(f), 6000).await;
            t.push(format!("leader to follower: {line}"));
            let mut new = new.unwrap();
            let a = new.request(OpCode::Create, &create("/c", 0)).await.unwrap();
            t.push(format!(
                "old leader connection, getData: {}",
                outcome(&mut old, OpCode::GetData, &get).await
            ));
            let b = new.request(OpCode::Create, &create("/d", 0)).await.unwrap();
            t.push(format!(
                "zxids the old read took: {}",
                b.header.zxid - a.header.zxid - 1
            ));
            // Re-attached on the same server: the old connection is closed at once.
            let mut old = RawClient::connect(e.addr(f), 6000).await.unwrap();
            let (_new, line) = reattach(&old, e.addr(f), 6000).await;
            t.push(format!("on the same server: {line}"));
            old.set_read_timeout(Duration::from_secs(5));
            t.push(format!(
                "its old connection: {}",
                match old.read_frame().await {
                    Ok(None) | Err(_) => "closed",
                    Ok(Some(_)) => "a frame",
                }
            ));
            t
        })
    });
}

#[test]
fn a_client_ahead_of_a_server_is_refused_and_sync_catches_up() {
    judge("lastZxidSeen and sync", With::Defaults, |e| {
        Box::pin(async move {
            let mut t = Vec::new();
            let (f, _, l) = followers(e);
            for (who, i) in [("leader", l), ("follower", f)] {
                let req = connect_req(0, zeros(), 0x7fff_ffff_0000_0000, 6000, false);
                let r = RawClient::handshake(e.addr(i), &req).await;
                t.push(format!(
                    "{who}, lastZxidSeen far ahead: {}",
                    match r {
                        Ok((_, None)) | Err(_) => "closed with no answer".to_string(),
                        Ok((_, Some(resp))) => format!("answered session {:#x}", resp.session_id),
                    }
                ));
            }
            let mut writer = RawClient::connect(e.addr(l), 6000).await.unwrap();
            let mut reader = RawClient::connect(e.addr(f), 6000).await.unwrap();
            let w = writer
                .request(OpCode::Create, &create("/s", 0))
                .await
                .unwrap();
            let s = reader
                .request(OpCode::Sync, &PathRequest { path: "/s".into() })
                .await
                .unwrap();
            let path = PathRequest::decode(&s.body)
                .map(|p| p.path)
                .unwrap_or_default();
            t.push(format!(
                "sync through a follower: err {}, path {path}, zxid the write's: {}",
                s.header.err,
                s.header.zxid == w.header.zxid
            ));
            let req = connect_req(0, zeros(), w.header.zxid, 6000, false);
            let r = RawClient::handshake(e.addr(l), &req).await.unwrap();
            t.push(format!(
                "leader, lastZxidSeen = its last zxid: answered {}",
                r.1.is_some()
            ));
            t
        })
    });
}

#[test]
fn quorum_loss_then_read_only_mode_then_the_quorum_back() {
    judge("quorum loss and read-only mode", With::ReadOnlyMode, |e| {
        Box::pin(async move {
            let mut t = Vec::new();
            let (f, g, l) = followers(e);
            let mut c = RawClient::connect(e.addr(f), 6000).await.unwrap();
            let _ = c
                .request(OpCode::Create, &create("/before", 0))
                .await
                .unwrap();
            e.kill(l);
            e.kill(g);
            t.push(format!(
                "the survivor, isro: {}",
                until_isro(e.addr(f), "ro", 30).await
            ));
            let srvr = four_letter(e.addr(f), b"srvr").await;
            t.push(format!(
                "its srvr: {:?}",
                srvr.lines()
                    .filter(|l| l.starts_with("Mode:") || l.starts_with("READ-ONLY"))
                    .collect::<Vec<_>>()
            ));
            let r = RawClient::handshake(e.addr(f), &connect_req(0, zeros(), 0, 6000, false)).await;
            t.push(format!(
                "a client that cannot be read-only: {}",
                match r {
                    Ok((_, None)) | Err(_) => "closed with no answer",
                    Ok((_, Some(_))) => "answered",
                }
            ));
            let r = RawClient::handshake(
                e.addr(f),
                &connect_req(c.session_id, c.passwd.clone(), 0, 6000, true),
            )
            .await;
            t.push(format!(
                "the global session, read-only re-attach: {}",
                match r {
                    Ok((_, None)) | Err(_) => "closed with no answer".to_string(),
                    Ok((_, Some(resp))) => format!("answered session {:#x}", resp.session_id),
                }
            ));
            t.push(format!(
                "a new read-only session: {}",
                new_read_only_session(e.addr(f)).await
            ));
            e.restart(l, false);
            t.push(format!(
                "a quorum again, isro: {}",
                until_isro(e.addr(f), "rw", 60).await
            ));
            t
        })
    });
}

/// Waits up to `secs` for the server at `addr` to answer `isro` with
/// `want`; what it answered last.
async fn until_isro(addr: SocketAddr, want: &str, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let isro = four_letter(addr, b"isro").await;
        if isro == want || Instant::now() >= deadline {
            return isro;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A read-only server's local session is unknown to the leader. While its
/// server, still read-only, is cut off and the other two have a quorum
/// again, its re-attach on a server of the quorum is answered as expired
/// (`LearnerZooKeeperServer.revalidateSession` asks the leader, whose
/// tracker never knew it) and closed. Once its server rejoins, the local
/// session is gone: its connection there is closed, and a re-attach there is
/// expired too.
#[test]
fn a_read_only_servers_local_session_while_the_others_have_a_quorum() {
    judge(
        "a read-only server's local session",
        With::ReadOnlyLocalSessions,
        |e| {
            Box::pin(async move {
                let mut t = Vec::new();
                let (f, g, l) = followers(e);
                e.kill(l);
                e.kill(g);
                t.push(format!(
                    "the survivor, isro: {}",
                    until_isro(e.addr(f), "ro", 30).await
                ));
                let made =
                    RawClient::handshake(e.addr(f), &connect_req(0, zeros(), 0, 6000, true)).await;
                let Ok((mut local, Some(resp))) = made else {
                    t.push("a new read-only session: not answered".into());
                    return t;
                };
                t.push(format!(
                    "a new read-only session: a session: {}, read-only: {:?}, timeout {}",
                    resp.session_id != 0,
                    resp.read_only,
                    resp.time_out
                ));
                e.cut_off(f);
                e.restart(l, false);
                e.restart(g, false);
                t.push(format!(
                    "the two restarted, isro: {} and {}",
                    until_isro(e.addr(l), "rw", 60).await,
                    until_isro(e.addr(g), "rw", 60).await
                ));
                let again = connect_req(local.session_id, local.passwd.clone(), 0, 6000, false);
                let reattach = |addr: SocketAddr| {
                    let again = &again;
                    async move {
                        match RawClient::handshake(addr, again).await {
                            Ok((mut c, Some(resp))) => format!(
                                "session {:#x}, timeout {}, then {}",
                                resp.session_id,
                                resp.time_out,
                                after_kill(&mut c).await
                            ),
                            Ok((_, None)) => "closed with no answer".into(),
                            Err(err) => format!("{}", err.kind()),
                        }
                    }
                };
                t.push(format!(
                    "re-attached on a server of the quorum: {}",
                    reattach(e.addr(l)).await
                ));
                e.reconnect(f);
                t.push(format!(
                    "its own server back, isro: {}",
                    until_isro(e.addr(f), "rw", 60).await
                ));
                t.push(format!(
                    "the local session's connection: {}",
                    after_kill(&mut local).await
                ));
                t.push(format!(
                    "re-attached on its own server: {}",
                    reattach(e.addr(f)).await
                ));
                t
            })
        },
    );
}

/// A new session with readOnly set, on a read-only server without local
/// sessions: what comes back, byte by byte.
async fn new_read_only_session(addr: SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = connect_req(0, zeros(), 0, 6000, true);
    s.write_all(&zk_mock::codec::frame(&req.to_bytes()))
        .await
        .unwrap();
    let mut len = [0u8; 4];
    match tokio::time::timeout(Duration::from_secs(5), s.read_exact(&mut len)).await {
        Ok(Ok(_)) => {}
        _ => return "no answer".into(),
    }
    let n = u32::from_be_bytes(len) as usize;
    let mut body = vec![0u8; n];
    s.read_exact(&mut body).await.unwrap();
    if n == 16 {
        let xid = i32::from_be_bytes(body[0..4].try_into().unwrap());
        let err = i32::from_be_bytes(body[12..16].try_into().unwrap());
        format!("a {n}-byte reply header: xid {xid}, err {err}")
    } else {
        format!("a {n}-byte frame")
    }
}

async fn four_letter(addr: SocketAddr, word: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return "refused".into();
    };
    if s.write_all(word).await.is_err() {
        return "closed".into();
    }
    let mut out = String::new();
    match tokio::time::timeout(Duration::from_secs(3), s.read_to_string(&mut out)).await {
        Ok(Ok(_)) => out.trim().to_string(),
        _ => "closed".into(),
    }
}

/// Authenticates `c` as the super user (`super:test`, the digest the
/// `Reconfig` ensembles are started with); what it answered.
async fn auth_as_super(c: &mut RawClient) -> String {
    let auth = zk_mock::proto::AuthPacket {
        auth_type: 0,
        scheme: "digest".into(),
        auth: Some(Bytes::from_static(b"super:test")),
    };
    let a = c
        .request_with_xid(-4, OpCode::Auth as i32, &auth.to_bytes())
        .await
        .unwrap();
    format!("auth as super: err {}", a.header.err)
}

/// A `ReconfigRequest` body: joining, leaving, newMembers (each may be
/// null) and curConfigId.
fn reconfig_body(joining: Option<&str>, leaving: Option<&str>, version: i64) -> Vec<u8> {
    reconfig_body_new(joining, leaving, None, version)
}

fn reconfig_body_new(
    joining: Option<&str>,
    leaving: Option<&str>,
    new_members: Option<&str>,
    version: i64,
) -> Vec<u8> {
    let mut b = Vec::new();
    for s in [joining, leaving, new_members] {
        match s {
            Some(s) => {
                b.extend_from_slice(&(s.len() as i32).to_be_bytes());
                b.extend_from_slice(s.as_bytes());
            }
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    b.extend_from_slice(&version.to_be_bytes());
    b
}

#[test]
fn reconfig_of_the_ensemble() {
    judge("reconfig", With::Reconfig, |e| {
        Box::pin(async move {
            let mut t = Vec::new();
            let l = e.leader();
            let mut c = RawClient::connect(e.addr(l), 6000).await.unwrap();
            let get = PathWatchRequest {
                path: "/zookeeper/config".into(),
                watch: false,
            };
            let r = c.request(OpCode::GetData, &get).await.unwrap();
            let data = zk_mock::proto::GetDataResponse::decode(&r.body).unwrap();
            let text =
                String::from_utf8_lossy(data.data.as_deref().unwrap_or_default()).into_owned();
            t.push(format!(
                "config: {} server lines, version {}",
                text.lines().filter(|l| l.starts_with("server.")).count(),
                text.lines().last().unwrap_or_default()
            ));
            t.push(format!(
                "config node: mzxid {:#x}, czxid {:#x}, version {}, aversion {}",
                data.stat.mzxid, data.stat.czxid, data.stat.version, data.stat.aversion
            ));
            let observer = "server.100=0.0.0.0:1234:2345:observer;0.0.0.0:3456";
            let join = reconfig_body(Some(observer), None, -1);
            t.push(format!(
                "join without super: {}",
                outcome(&mut c, OpCode::Reconfig, &join).await
            ));
            let bad = reconfig_body(Some("some thing"), None, -1);
            t.push(format!(
                "bad input: {}",
                outcome(&mut c, OpCode::Reconfig, &bad).await
            ));
            let two = reconfig_body(Some("server.100=0.0.0.0:1234;3456"), None, -1);
            t.push(format!(
                "one port only: {}",
                outcome(&mut c, OpCode::Reconfig, &two).await
            ));
            t.push(auth_as_super(&mut c).await);
            let stale = reconfig_body(Some(observer), None, 0x1_0000_0000 + 12345);
            t.push(format!(
                "from a version that is not the config's: {}",
                outcome(&mut c, OpCode::Reconfig, &stale).await
            ));
            let r = c.request_raw(OpCode::Reconfig as i32, &join).await.unwrap();
            let joined = zk_mock::proto::GetDataResponse::decode(&r.body).unwrap();
            let text =
                String::from_utf8_lossy(joined.data.as_deref().unwrap_or_default()).into_owned();
            let version =
                i64::from_str_radix(text.rsplit('=').next().unwrap_or_default(), 16).unwrap_or(-1);
            t.push(format!(
                "join as super: err {}, the line in the config: {}, version = its zxid: {}, node version {}",
                r.header.err,
                text.contains(observer),
                version == r.header.zxid,
                joined.stat.version
            ));
            let leave = reconfig_body(None, Some("100"), version);
            let r = c
                .request_raw(OpCode::Reconfig as i32, &leave)
                .await
                .unwrap();
            let left = zk_mock::proto::GetDataResponse::decode(&r.body).unwrap();
            let text =
                String::from_utf8_lossy(left.data.as_deref().unwrap_or_default()).into_owned();
            t.push(format!(
                "leave from the current version: err {}, still there: {}",
                r.header.err,
                text.contains("server.100")
            ));
            t
        })
    });
}

/// `/zookeeper/config` through `c`: each server's id and role, and the
/// version line.
async fn config_roles(c: &mut RawClient) -> String {
    let get = PathWatchRequest {
        path: "/zookeeper/config".into(),
        watch: false,
    };
    let r = c.request(OpCode::GetData, &get).await.unwrap();
    let data = zk_mock::proto::GetDataResponse::decode(&r.body).unwrap();
    roles(&String::from_utf8_lossy(
        data.data.as_deref().unwrap_or_default(),
    ))
}

fn roles(config: &str) -> String {
    config
        .lines()
        .map(|l| match l.split_once('=') {
            Some((k, v)) if k.starts_with("server.") => {
                let role = v.split(';').next().unwrap_or_default();
                format!("{k} {}", role.rsplit(':').next().unwrap_or_default())
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[test]
fn observers_made_participants_by_a_reconfig() {
    judge("observers", With::Observers, |e| {
        Box::pin(async move {
            let mut t = Vec::new();
            t.push(format!("leader: server.{}", e.leader() + 1));
            let mut one = RawClient::connect(e.addr(0), 6000).await.unwrap();
            t.push(format!("config: {}", config_roles(&mut one).await));
            t.push(format!(
                "create through server.1: {}",
                outcome(&mut one, OpCode::Create, &create("/xx", 0).to_bytes()).await
            ));
            let mut three = RawClient::connect(e.addr(2), 6000).await.unwrap();
            let sync = PathRequest { path: "/".into() };
            t.push(format!(
                "sync through observer server.3: {}",
                outcome(&mut three, OpCode::Sync, &sync.to_bytes()).await
            ));
            let exists = PathWatchRequest {
                path: "/xx".into(),
                watch: false,
            };
            t.push(format!(
                "exists /xx there: {}",
                outcome(&mut three, OpCode::Exists, &exists.to_bytes()).await
            ));
            t.push(format!("config there: {}", config_roles(&mut three).await));

            // One voter: an observer's loss costs no write.
            e.kill(1);
            t.push(format!(
                "create with observer server.2 down: {}",
                outcome(&mut one, OpCode::Create, &create("/yy", 0).to_bytes()).await
            ));
            e.restart(1, true);

            t.push(auth_as_super(&mut one).await);
            let all: Vec<String> = (0..3).map(|i| e.server_line(i, "participant")).collect();
            let body = reconfig_body_new(None, None, Some(&all.join(",")), 0x1_0000_0000);
            let r = one
                .request_raw(OpCode::Reconfig as i32, &body)
                .await
                .unwrap();
            let data = zk_mock::proto::GetDataResponse::decode(&r.body).unwrap();
            t.push(format!(
                "every server a participant: err {}, config {}",
                r.header.err,
                roles(&String::from_utf8_lossy(
                    data.data.as_deref().unwrap_or_default()
                ))
                .split(", version")
                .next()
                .unwrap_or_default()
            ));

            // Three voters: server.1 can go; the others elect a leader.
            drop(one);
            drop(three);
            e.kill(0);
            let mut created = "no server took the write".to_string();
            'retry: for _ in 0..100 {
                for i in [1, 2] {
                    let Ok(mut c) = RawClient::connect(e.addr(i), 6000).await else {
                        continue;
                    };
                    let r = outcome(&mut c, OpCode::Create, &create("/zz", 0).to_bytes()).await;
                    if r == "err 0" {
                        created = r;
                        break 'retry;
                    }
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            t.push(format!("create with server.1 down: {created}"));
            let l = e.leader();
            t.push(format!("leader then: server.{}", l + 1));

            // Its loss leaves one voter of three: the last server is up but
            // serves nobody.
            let last = if l == 2 { 1 } else { 2 };
            e.kill(l);
            let deadline = Instant::now() + Duration::from_secs(30);
            let mut isro = String::new();
            while Instant::now() < deadline {
                isro = four_letter(e.addr(last), b"isro").await;
                if isro != "rw" {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            t.push(format!("no quorum; the last server, isro: {isro}"));
            for word in [&b"ruok"[..], b"srvr", b"mntr", b"cons", b"conf", b"wchs"] {
                t.push(format!(
                    "  {}: {:?}",
                    String::from_utf8_lossy(word),
                    four_letter(e.addr(last), word).await
                ));
            }
            let r =
                RawClient::handshake(e.addr(last), &connect_req(0, zeros(), 0, 6000, false)).await;
            t.push(format!(
                "  a new client: {}",
                match r {
                    Ok((_, None)) | Err(_) => "closed with no answer",
                    Ok((_, Some(_))) => "answered",
                }
            ));
            t
        })
    });
}

/// `srvr`'s `Mode:` line on server `i` (or what it said instead).
async fn mode(e: &dyn Ensemble, i: usize) -> String {
    let out = four_letter(e.addr(i), b"srvr").await;
    out.lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map_or(out.clone(), str::to_string)
}

#[test]
fn a_reconfig_that_removes_the_leader() {
    judge("leader removed", With::Reconfig, |e| {
        Box::pin(async move {
            let mut t = Vec::new();
            let l = e.leader();
            let f = (l + 1) % 3;
            let mut on_follower = RawClient::connect(e.addr(f), 6000).await.unwrap();
            let mut c = RawClient::connect(e.addr(l), 6000).await.unwrap();
            t.push(auth_as_super(&mut c).await);
            let leave = reconfig_body(None, Some(&(l + 1).to_string()), -1);
            let r = c.request_raw(OpCode::Reconfig as i32, &leave).await;
            t.push(match r {
                Ok(r) => format!("remove the leader: err {}", r.header.err),
                Err(_) => "remove the leader: no answer".into(),
            });
            // Who leads once it settles.
            let mut modes = Vec::new();
            for _ in 0..100 {
                modes = Vec::new();
                for i in 0..3 {
                    modes.push(mode(&*e, i).await);
                }
                // Settled: one new leader, and the other two (the removed
                // one too, once it has rejoined) following it.
                let leaders: Vec<usize> = (0..3).filter(|&i| modes[i] == "leader").collect();
                let following = modes.iter().filter(|m| *m == "follower").count();
                if leaders.len() == 1 && leaders[0] != l && following == 2 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let new_leader = modes.iter().position(|m| m == "leader");
            let lowest_left = (0..3).find(|&i| i != l);
            t.push(format!(
                "the new leader is the lowest id left: {}",
                new_leader.is_some() && new_leader == lowest_left
            ));
            t.push(format!("the removed leader: {}", modes[l]));
            let other = (0..3)
                .find(|&i| i != l && Some(i) != new_leader)
                .unwrap_or(0);
            t.push(format!("the other server: {}", modes[other]));
            let ping = on_follower.request_raw(OpCode::Ping as i32, &[]).await;
            t.push(format!(
                "the follower's client: {}",
                if ping.is_ok() {
                    "still connected"
                } else {
                    "dropped"
                }
            ));
            t
        })
    });
}
