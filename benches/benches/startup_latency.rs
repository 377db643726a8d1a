//! Start-to-session time and getData round-trip latency of zk-mock.
//!
//! `cargo bench -p benches --bench startup_latency` prints one table:
//!
//! 1. `ZkMock::start()` → first connected session, with the raw wire client
//!    (`RawClient::connect`) and with the real Rust client
//!    (`zookeeper_client::Client::connect`), split into phases.
//! 2. getData of a 100-byte node on an established session (both clients),
//!    next to a bare loopback TCP ping-pong with the same frame sizes, all in
//!    this process and runtime, measured in interleaved blocks.
//!
//!    On a small machine a round trip costs ~7 µs when client and server
//!    threads share a CPU and ~50-90 µs when a wake-up crosses CPUs, and the
//!    kernel may place the echo server and zk-mock differently. So each
//!    series runs three times: as the kernel places threads (`[sched]`, not
//!    judged), with every thread pinned to one CPU, and with client and
//!    server threads pinned to two different CPUs; the ratio targets are
//!    judged on the pinned, like-for-like layouts. Start → session runs as
//!    scheduled and on one CPU.
//! 3. For context, if Java and ZooKeeper 3.8 are installed: a real
//!    ZooKeeper's start-to-session time and getData latency.
//!
//! Iteration counts can be overridden with `STARTUP_LATENCY_STARTS`,
//! `STARTUP_LATENCY_RTTS` and `STARTUP_LATENCY_JAVA_STARTS` (0 skips Java).
//! The last line of output is the same data as one JSON object.

use std::fmt::Write as _;
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zk_mock::client::RawClient;
use zk_mock::codec::{frame, split_frame, Record};
use zk_mock::proto::{Acl, CreateRequest, GetDataResponse, OpCode, PathWatchRequest};
use zk_mock::real::RealZk;
use zk_mock::ZkMock;

const WARMUP_STARTS: usize = 20;
const STARTS: usize = 200;
const WARMUP_RTTS: usize = 2_000;
const RTTS: usize = 20_000;
/// Round trips per block; the three round-trip series alternate block by block
/// so that machine noise hits them alike.
const RTT_BLOCK: usize = 500;
const JAVA_STARTS: usize = 3;
const JAVA_RTTS: usize = 5_000;
const JAVA_WARMUP_RTTS: usize = 2_000;
const DATA_LEN: usize = 100;
const NODE: &str = "/a";

const TARGET_START_MEDIAN: Duration = Duration::from_millis(2);
const TARGET_RATIO: f64 = 3.0;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Err(e) = rt.block_on(run()) {
        eprintln!("startup_latency failed: {e}");
        std::process::exit(1);
    }
}

fn env_count(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Latency samples, sorted once measured.
#[derive(Debug, Clone)]
struct Samples {
    ns: Vec<u64>,
}

impl Samples {
    fn with_capacity(n: usize) -> Self {
        Samples {
            ns: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, d: Duration) {
        self.ns.push(d.as_nanos() as u64);
    }

    fn sorted(mut self) -> Self {
        self.ns.sort_unstable();
        self
    }

    /// Nearest-rank percentile of sorted samples.
    fn pct(&self, p: f64) -> Duration {
        if self.ns.is_empty() {
            return Duration::ZERO;
        }
        let rank = ((p / 100.0) * self.ns.len() as f64).ceil() as usize;
        Duration::from_nanos(self.ns[rank.clamp(1, self.ns.len()) - 1])
    }

    fn min(&self) -> Duration {
        Duration::from_nanos(self.ns.first().copied().unwrap_or(0))
    }

    fn max(&self) -> Duration {
        Duration::from_nanos(self.ns.last().copied().unwrap_or(0))
    }

    fn mean(&self) -> Duration {
        if self.ns.is_empty() {
            return Duration::ZERO;
        }
        Duration::from_nanos(self.ns.iter().sum::<u64>() / self.ns.len() as u64)
    }
}

fn fmt_d(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 100_000.0 {
        format!("{:.0} ms", us / 1000.0)
    } else if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} µs")
    }
}

/// One table row: a label and sorted samples.
#[derive(Debug)]
struct Row {
    key: &'static str,
    label: String,
    s: Samples,
}

#[derive(Debug, Default)]
struct Report {
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Report {
    fn add(&mut self, key: &'static str, label: impl Into<String>, s: Samples) {
        self.rows.push(Row {
            key,
            label: label.into(),
            s: s.sorted(),
        });
    }

    fn get(&self, key: &str) -> Option<&Samples> {
        self.rows.iter().find(|r| r.key == key).map(|r| &r.s)
    }
}

// ---------------------------------------------------------------------------
// 1. start → session

fn startup_keys(p: Placement) -> [&'static str; 7] {
    match p {
        Placement::Default => [
            "start_raw",
            "start_raw_start",
            "start_raw_connect",
            "start_raw_drop",
            "start_zkc",
            "start_zkc_connect",
            "start_zkc_drop",
        ],
        _ => [
            "start_raw_same",
            "start_raw_same_start",
            "start_raw_same_connect",
            "start_raw_same_drop",
            "start_zkc_same",
            "start_zkc_same_connect",
            "start_zkc_same_drop",
        ],
    }
}

async fn startup_raw(report: &mut Report, n: usize, p: Placement) -> Result<(), BoxError> {
    let mut total = Samples::with_capacity(n);
    let mut start = Samples::with_capacity(n);
    let mut connect = Samples::with_capacity(n);
    let mut teardown = Samples::with_capacity(n);
    for i in 0..WARMUP_STARTS + n {
        let t0 = Instant::now();
        let zk = ZkMock::start().await;
        let t1 = Instant::now();
        let c = RawClient::connect(zk.addr(), 10_000).await?;
        let t2 = Instant::now();
        assert_ne!(c.session_id, 0);
        drop(c);
        drop(zk);
        let t3 = Instant::now();
        if i >= WARMUP_STARTS {
            total.push(t2 - t0);
            start.push(t1 - t0);
            connect.push(t2 - t1);
            teardown.push(t3 - t2);
        }
    }
    let k = startup_keys(p);
    let tag = p.tag();
    report.add(k[0], format!("{tag} start → session, RawClient"), total);
    report.add(k[1], "    of which ZkMock::start()", start);
    report.add(k[2], "    of which RawClient::connect", connect);
    report.add(k[3], "    (not counted) drop client + ZkMock", teardown);
    Ok(())
}

async fn startup_zkc(report: &mut Report, n: usize, p: Placement) -> Result<(), BoxError> {
    let mut total = Samples::with_capacity(n);
    let mut connect = Samples::with_capacity(n);
    let mut teardown = Samples::with_capacity(n);
    for i in 0..WARMUP_STARTS + n {
        let t0 = Instant::now();
        let zk = ZkMock::start().await;
        let t1 = Instant::now();
        let client = zookeeper_client::Client::connect(&zk.connect_string()).await?;
        let t2 = Instant::now();
        close_zkc(client).await;
        drop(zk);
        let t3 = Instant::now();
        if i >= WARMUP_STARTS {
            total.push(t2 - t0);
            connect.push(t2 - t1);
            teardown.push(t3 - t2);
        }
    }
    let k = startup_keys(p);
    let tag = p.tag();
    report.add(
        k[4],
        format!("{tag} start → session, zookeeper-client"),
        total,
    );
    report.add(k[5], "    of which Client::connect", connect);
    report.add(
        k[6],
        "    (not counted) close session + drop ZkMock",
        teardown,
    );
    Ok(())
}

/// Drops the client and waits for its session task to close the session, so
/// no task outlives its server and retries against a reused port.
async fn close_zkc(client: zookeeper_client::Client) {
    let mut w = client.state_watcher();
    drop(client);
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while !w.peek_state().is_terminated() {
            w.changed().await;
        }
    })
    .await;
}

// ---------------------------------------------------------------------------
// 2. round trips

fn data() -> Bytes {
    Bytes::from(
        (0..DATA_LEN)
            .map(|i| b'a' + (i % 26) as u8)
            .collect::<Vec<u8>>(),
    )
}

fn get_data_request() -> PathWatchRequest {
    PathWatchRequest {
        path: NODE.into(),
        watch: false,
    }
}

async fn create_node(c: &mut RawClient) -> Result<(), BoxError> {
    let r = c
        .request(
            OpCode::Create,
            &CreateRequest {
                path: NODE.into(),
                data: Some(data()),
                acl: Acl::open_shared(),
                flags: 0,
            },
        )
        .await?;
    if r.header.err != 0 {
        return Err(format!("create {NODE} failed: err {}", r.header.err).into());
    }
    Ok(())
}

async fn raw_get(c: &mut RawClient, req: &PathWatchRequest) -> Result<(), BoxError> {
    let r = c.request(OpCode::GetData, req).await?;
    if r.header.err != 0 {
        return Err(format!("getData failed: err {}", r.header.err).into());
    }
    Ok(())
}

/// A bare TCP server that answers every length-prefixed frame with a frame
/// of `reply_body` bytes. Like zk-mock it runs on its own thread with its own
/// current-thread Tokio runtime, so the comparison differs only in what the
/// server does per request.
#[derive(Debug)]
struct EchoServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl EchoServer {
    fn start(reply_body: usize) -> io::Result<EchoServer> {
        let std_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let reply = frame(&vec![0x5a; reply_body]);
        let thread = std::thread::Builder::new()
            .name("tcp-echo".into())
            .spawn(move || {
                rt.block_on(async move {
                    let listener = TcpListener::from_std(std_listener).expect("register listener");
                    loop {
                        tokio::select! {
                            r = listener.accept() => {
                                let Ok((sock, _)) = r else { continue };
                                tokio::spawn(echo_conn(sock, reply.clone()));
                            }
                            _ = &mut stopped => break,
                        }
                    }
                });
            })?;
        Ok(EchoServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for EchoServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn echo_conn(mut sock: TcpStream, reply: Bytes) {
    let _ = sock.set_nodelay(true);
    let mut buf = BytesMut::with_capacity(4096);
    loop {
        match split_frame(&mut buf, usize::MAX >> 1) {
            Ok(Some(_req)) => {
                if sock.write_all(&reply).await.is_err() {
                    return;
                }
                continue;
            }
            Ok(None) => {}
            Err(_) => return,
        }
        match sock.read_buf(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// The client side of the ping-pong, built like `RawClient::request`: encode a
/// frame, `write_all`, `read_buf` until a whole frame is buffered.
#[derive(Debug)]
struct PingClient {
    stream: TcpStream,
    buf: BytesMut,
    body: Vec<u8>,
}

impl PingClient {
    async fn connect(addr: SocketAddr, request_body: usize) -> io::Result<PingClient> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(PingClient {
            stream,
            buf: BytesMut::with_capacity(4096),
            body: vec![0x17; request_body],
        })
    }

    async fn ping(&mut self) -> io::Result<Bytes> {
        let mut b = BytesMut::with_capacity(self.body.len());
        b.extend_from_slice(&self.body);
        self.stream.write_all(&frame(&b)).await?;
        loop {
            if let Some(f) = split_frame(&mut self.buf, usize::MAX >> 1)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
            {
                return Ok(f);
            }
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }
}

/// Everything the round-trip series need: one zk-mock per client (so each
/// server thread has a single waker, like the echo server), the echo server,
/// and the three clients.
#[derive(Debug)]
struct RttSetup {
    zk_raw: ZkMock,
    zk_zkc: ZkMock,
    raw: RawClient,
    zkc: zookeeper_client::Client,
    echo: EchoServer,
    ping: PingClient,
    req: PathWatchRequest,
    req_frame: usize,
    reply_frame: usize,
    last_cpus: Vec<(&'static str, String)>,
}

impl RttSetup {
    async fn new() -> Result<RttSetup, BoxError> {
        let zk_raw = ZkMock::start().await;
        let mut raw = RawClient::connect(zk_raw.addr(), 10_000).await?;
        create_node(&mut raw).await?;
        let req = get_data_request();

        // Frame sizes of a getData exchange, body only (the 4-byte prefix comes on top).
        let req_body = 8 + req.to_bytes().len();
        let r = raw.request(OpCode::GetData, &req).await?;
        let resp: GetDataResponse = r.decode()?;
        assert_eq!(resp.data.as_deref().map(<[u8]>::len), Some(DATA_LEN));
        let reply_body = 16 + r.body.len();

        let zk_zkc = ZkMock::start().await;
        let zkc = zookeeper_client::Client::connect(&zk_zkc.connect_string()).await?;
        zkc.create(
            NODE,
            &data(),
            &zookeeper_client::CreateMode::Persistent
                .with_acls(zookeeper_client::Acls::anyone_all()),
        )
        .await?;
        let (d, _) = zkc.get_data(NODE).await?;
        assert_eq!(d.len(), DATA_LEN);

        let echo = EchoServer::start(reply_body)?;
        let mut ping = PingClient::connect(echo.addr, req_body).await?;
        assert_eq!(ping.ping().await?.len(), reply_body);
        Ok(RttSetup {
            zk_raw,
            zk_zkc,
            raw,
            zkc,
            echo,
            ping,
            req,
            req_frame: req_body + 4,
            reply_frame: reply_body + 4,
            last_cpus: Vec::new(),
        })
    }

    async fn close(self) -> Result<(), BoxError> {
        close_zkc(self.zkc).await;
        self.raw.close().await?;
        drop(self.ping);
        drop(self.echo);
        drop(self.zk_raw);
        drop(self.zk_zkc);
        Ok(())
    }

    /// Which CPU the threads of one series last ran on (right after it).
    fn probe(&mut self, series: &'static str, threads: &[&str]) {
        let names: Vec<(String, &str)> = threads
            .iter()
            .map(|&t| match t {
                "raw" => (
                    format!("zk-mock-{}", self.zk_raw.addr().port()),
                    "zk-mock (RawClient's)",
                ),
                "zkc" => (
                    format!("zk-mock-{}", self.zk_zkc.addr().port()),
                    "zk-mock (zookeeper-client's)",
                ),
                "async-io" => ("async-io".into(), "async-io (zookeeper-client's reactor)"),
                _ => ("tcp-echo".into(), "TCP echo"),
            })
            .collect();
        self.last_cpus.push((series, affinity::last_cpus(&names)));
    }

    /// Warm-up, then `n` round trips per series in alternating blocks.
    async fn measure(&mut self, n: usize) -> Result<[Samples; 3], BoxError> {
        self.last_cpus.clear();
        for _ in 0..WARMUP_RTTS {
            self.ping.ping().await?;
            raw_get(&mut self.raw, &self.req).await?;
            self.zkc.get_data(NODE).await?;
        }
        let mut tcp = Samples::with_capacity(n);
        let mut rawg = Samples::with_capacity(n);
        let mut zkcg = Samples::with_capacity(n);
        let mut done = 0;
        while done < n {
            let k = RTT_BLOCK.min(n - done);
            let last = done + k >= n;
            for _ in 0..k {
                let t = Instant::now();
                self.ping.ping().await?;
                tcp.push(t.elapsed());
            }
            if last {
                self.probe("TCP", &["echo"]);
            }
            for _ in 0..k {
                let t = Instant::now();
                raw_get(&mut self.raw, &self.req).await?;
                rawg.push(t.elapsed());
            }
            if last {
                self.probe("RawClient getData", &["raw"]);
            }
            for _ in 0..k {
                let t = Instant::now();
                self.zkc.get_data(NODE).await?;
                zkcg.push(t.elapsed());
            }
            if last {
                self.probe("zookeeper-client getData", &["zkc", "async-io"]);
            }
            done += k;
        }
        Ok([tcp, rawg, zkcg])
    }
}

async fn round_trips(
    report: &mut Report,
    n: usize,
    placements: &[Placement],
) -> Result<(usize, usize), BoxError> {
    let mut setup = RttSetup::new().await?;
    let sizes = (setup.req_frame, setup.reply_frame);
    for &p in placements {
        if let Err(e) = p.apply() {
            report.notes.push(format!(
                "placement {}: cannot set CPU affinity: {e}",
                p.name()
            ));
            continue;
        }
        let [tcp, rawg, zkcg] = setup.measure(n).await?;
        if p == Placement::Default {
            for (series, cpus) in &setup.last_cpus {
                report
                    .notes
                    .push(format!("[sched] at the end of the {series} series: {cpus}"));
            }
        }
        let (k_tcp, k_raw, k_zkc) = p.rtt_keys();
        report.add(
            k_tcp,
            format!("{} TCP ping-pong {}→{} B", p.tag(), sizes.0, sizes.1),
            tcp,
        );
        report.add(k_raw, format!("{} getData 100 B, RawClient", p.tag()), rawg);
        report.add(
            k_zkc,
            format!("{} getData 100 B, zookeeper-client", p.tag()),
            zkcg,
        );
    }
    let _ = Placement::Default.apply();
    setup.close().await?;
    Ok(sizes)
}

// ---------------------------------------------------------------------------
// thread placement

/// Where the threads run. On a small (virtual) machine the round-trip time is
/// dominated by whether client and server threads share a CPU: a wake-up
/// across CPUs costs tens of µs, so besides the kernel's own choice the bench
/// pins both layouts explicitly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// The affinity the process started with; the kernel decides.
    Default,
    /// Every thread on one CPU.
    Same(usize),
    /// Client threads on one CPU, server threads (zk-mock, echo) on another.
    Split { client: usize, server: usize },
}

impl Placement {
    fn name(self) -> &'static str {
        match self {
            Placement::Default => "as scheduled",
            Placement::Same(_) => "one CPU",
            Placement::Split { .. } => "split CPUs",
        }
    }

    fn tag(self) -> String {
        match self {
            Placement::Default => "[sched]".into(),
            Placement::Same(c) => format!("[cpu {c}]"),
            Placement::Split { client, server } => format!("[cpu {client}|{server}]"),
        }
    }

    fn rtt_keys(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Placement::Default => ("tcp", "get_raw", "get_zkc"),
            Placement::Same(_) => ("tcp_same", "get_raw_same", "get_zkc_same"),
            Placement::Split { .. } => ("tcp_split", "get_raw_split", "get_zkc_split"),
        }
    }

    /// Pins every thread of the process; threads spawned later inherit the
    /// affinity of the thread that spawns them (here: the client side's).
    fn apply(self) -> io::Result<()> {
        affinity::apply(self)
    }

    /// The placements this machine supports, the kernel's own first.
    fn available() -> Vec<Placement> {
        let cpus = affinity::allowed();
        let mut v = vec![Placement::Default];
        if let Some(&a) = cpus.first() {
            v.push(Placement::Same(a));
        }
        if let [a, b, ..] = cpus[..] {
            v.push(Placement::Split {
                client: a,
                server: b,
            });
        }
        v
    }
}

#[cfg(target_os = "linux")]
mod affinity {
    use std::io;
    use std::sync::OnceLock;

    use rustix::thread::{sched_getaffinity, sched_setaffinity, CpuSet, Pid};

    use super::Placement;

    fn original() -> &'static CpuSet {
        static ORIG: OnceLock<CpuSet> = OnceLock::new();
        ORIG.get_or_init(|| sched_getaffinity(None).unwrap_or_else(|_| all_cpus()))
    }

    fn all_cpus() -> CpuSet {
        let mut s = CpuSet::new();
        for c in 0..CpuSet::MAX_CPU {
            s.set(c);
        }
        s
    }

    fn one(cpu: usize) -> CpuSet {
        let mut s = CpuSet::new();
        s.set(cpu);
        s
    }

    /// The CPUs the process may run on, in ascending order.
    pub(super) fn allowed() -> Vec<usize> {
        let set = original();
        (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect()
    }

    fn is_server_thread(comm: &str) -> bool {
        comm.starts_with("zk-mock-") || comm.starts_with("tcp-echo")
    }

    /// Which CPU each interesting thread last ran on (`/proc/…/stat` field 39).
    pub(super) fn last_cpus(names: &[(String, &str)]) -> String {
        let main = std::process::id().to_string();
        let mut out = Vec::new();
        let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
            return "unknown".into();
        };
        for entry in dir.flatten() {
            let tid = entry.file_name().to_string_lossy().into_owned();
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            let comm = comm.trim_end();
            let name = if tid == main {
                "main (clients)"
            } else if let Some((_, label)) = names.iter().find(|(n, _)| n == comm) {
                label
            } else {
                continue;
            };
            let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
            // Fields after the parenthesised comm start at field 3.
            let cpu = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(39 - 3))
                .unwrap_or("?");
            out.push(format!("{name} → cpu {cpu}"));
        }
        out.join(", ")
    }

    pub(super) fn apply(p: Placement) -> io::Result<()> {
        original(); // captured before the first change
        for entry in std::fs::read_dir("/proc/self/task")? {
            let entry = entry?;
            let Some(tid) = entry
                .file_name()
                .to_str()
                .and_then(|t| t.parse::<i32>().ok())
                .and_then(Pid::from_raw)
            else {
                continue;
            };
            let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            let set = match p {
                Placement::Default => *original(),
                Placement::Same(c) => one(c),
                Placement::Split { client, server } => one(if is_server_thread(comm.trim_end()) {
                    server
                } else {
                    client
                }),
            };
            match sched_setaffinity(Some(tid), &set) {
                Ok(()) => {}
                // The thread exited since the directory was read.
                Err(rustix::io::Errno::SRCH) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod affinity {
    use std::io;

    use super::Placement;

    pub(super) fn allowed() -> Vec<usize> {
        Vec::new()
    }

    pub(super) fn last_cpus(_names: &[(String, &str)]) -> String {
        "unknown".into()
    }

    pub(super) fn apply(p: Placement) -> io::Result<()> {
        match p {
            Placement::Default => Ok(()),
            _ => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "thread pinning is implemented for Linux only",
            )),
        }
    }
}

// ---------------------------------------------------------------------------
// 3. real ZooKeeper, for context

fn java_ready() -> Result<(), String> {
    if RealZk::available() {
        Ok(())
    } else {
        Err("java or ZooKeeper's jars are missing (apt-get install zookeeper)".into())
    }
}

/// The JVM as the tests start it, but tuned for speed, not startup: the
/// full JIT, the JVM's default heap, fsynced writes.
fn spawn_java() -> Result<RealZk, BoxError> {
    Ok(RealZk::builder()
        .heap(None)
        .quick_jit(false)
        .sync_writes(true)
        .spawn()?)
}

/// Retries `RawClient::connect` until the server answers a handshake.
async fn connect_when_up(zk: &RealZk, addr: SocketAddr) -> Result<RawClient, BoxError> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // While it starts, ZooKeeper may accept a connection and never
        // answer it; give up on such an attempt quickly and try again.
        if let Ok(Ok(c)) =
            tokio::time::timeout(Duration::from_millis(100), RawClient::connect(addr, 10_000)).await
        {
            return Ok(c);
        }
        if zk.died() || zk.exited().is_some() {
            return Err(format!("ZooKeeper exited; its log:\n{}", zk.log_tail(40)).into());
        }
        if Instant::now() > deadline {
            return Err("ZooKeeper did not accept a session within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn real_zookeeper(report: &mut Report, n: usize) -> Result<(), BoxError> {
    let mut starts = Samples::with_capacity(n);
    let mut gets = Samples::with_capacity(JAVA_RTTS);
    for i in 0..n {
        let t0 = Instant::now();
        let zk = spawn_java()?;
        let mut c = connect_when_up(&zk, zk.addr()).await?;
        starts.push(t0.elapsed());
        if i == n - 1 {
            create_node(&mut c).await?;
            let req = get_data_request();
            for _ in 0..JAVA_WARMUP_RTTS {
                raw_get(&mut c, &req).await?;
            }
            for _ in 0..JAVA_RTTS {
                let t = Instant::now();
                raw_get(&mut c, &req).await?;
                gets.push(t.elapsed());
            }
        }
        drop(c);
        drop(zk);
    }
    report.add(
        "java_start",
        "ZooKeeper 3.8 (JVM): spawn → session, RawClient",
        starts,
    );
    report.add(
        "java_get",
        "ZooKeeper 3.8 (JVM): getData 100 B, RawClient",
        gets,
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// output

fn print_table(report: &Report) {
    let width = report
        .rows
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0);
    println!(
        "{:<width$} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "measurement", "n", "min", "p50", "p90", "p99", "max", "mean"
    );
    println!("{}", "-".repeat(width + 7 + 6 * 11));
    for r in &report.rows {
        let s = &r.s;
        println!(
            "{:<width$} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            r.label,
            s.ns.len(),
            fmt_d(s.min()),
            fmt_d(s.pct(50.0)),
            fmt_d(s.pct(90.0)),
            fmt_d(s.pct(99.0)),
            fmt_d(s.max()),
            fmt_d(s.mean()),
        );
    }
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "MET"
    } else {
        "MISSED"
    }
}

fn ratio(report: &Report, num: &str, den: &str) -> Option<f64> {
    let n = report.get(num)?.pct(50.0).as_secs_f64();
    let d = report.get(den)?.pct(50.0).as_secs_f64();
    (d > 0.0).then(|| n / d)
}

fn print_targets(report: &Report) -> Vec<(String, String)> {
    let mut json = Vec::new();
    println!();
    println!("targets (medians and ratios from this run)");
    for (key, what) in [
        ("start_raw", "[sched] median start → session, RawClient"),
        (
            "start_zkc",
            "[sched] median start → session, zookeeper-client",
        ),
        (
            "start_raw_same",
            "[one CPU] median start → session, RawClient",
        ),
        (
            "start_zkc_same",
            "[one CPU] median start → session, zookeeper-client",
        ),
    ] {
        if let Some(s) = report.get(key) {
            let m = s.pct(50.0);
            println!(
                "  {what:<52} {:>9}   target < {}   {}",
                fmt_d(m),
                fmt_d(TARGET_START_MEDIAN),
                verdict(m < TARGET_START_MEDIAN)
            );
        }
    }
    // Like for like: both servers under the same pinned layout.
    for (num, den, what) in [
        (
            "get_raw_same",
            "tcp_same",
            "[one CPU] getData p50 / TCP p50, RawClient",
        ),
        (
            "get_zkc_same",
            "tcp_same",
            "[one CPU] getData p50 / TCP p50, zookeeper-client",
        ),
        (
            "get_raw_split",
            "tcp_split",
            "[split CPUs] getData p50 / TCP p50, RawClient",
        ),
        (
            "get_zkc_split",
            "tcp_split",
            "[split CPUs] getData p50 / TCP p50, zookeeper-client",
        ),
    ] {
        if let Some(r) = ratio(report, num, den) {
            println!(
                "  {what:<52} {r:>9.2}   target ≤ {TARGET_RATIO:.0}         {}",
                verdict(r <= TARGET_RATIO)
            );
            json.push((format!("ratio_{num}_over_{den}_p50"), format!("{r:.3}")));
        }
    }
    // The kernel may put the echo server next to the client and zk-mock on
    // the other CPU or the other way round, so this ratio says more about
    // placement than about zk-mock; printed, not judged.
    for (num, den, what) in [
        ("get_raw", "tcp", "[sched] getData p50 / TCP p50, RawClient"),
        (
            "get_zkc",
            "tcp",
            "[sched] getData p50 / TCP p50, zookeeper-client",
        ),
    ] {
        if let Some(r) = ratio(report, num, den) {
            println!("  {what:<52} {r:>9.2}   (placement-dependent: not judged)");
            json.push((format!("ratio_{num}_over_{den}_p50"), format!("{r:.3}")));
        }
    }
    if let Some(r) = ratio(report, "java_start", "start_raw") {
        println!(
            "  {:<52} {r:>9.0}x",
            "context: real ZooKeeper start / zk-mock start (p50)"
        );
    }
    json
}

fn json_line(report: &Report, extra: &[(String, String)]) -> String {
    let mut out = String::from("{\"bench\":\"startup_latency\"");
    for r in &report.rows {
        let s = &r.s;
        let _ = write!(
            out,
            ",\"{}\":{{\"n\":{},\"min_ns\":{},\"p50_ns\":{},\"p90_ns\":{},\"p99_ns\":{},\"max_ns\":{},\"mean_ns\":{}}}",
            r.key,
            s.ns.len(),
            s.min().as_nanos(),
            s.pct(50.0).as_nanos(),
            s.pct(90.0).as_nanos(),
            s.pct(99.0).as_nanos(),
            s.max().as_nanos(),
            s.mean().as_nanos(),
        );
    }
    for (k, v) in extra {
        let _ = write!(out, ",\"{k}\":{v}");
    }
    for (i, n) in report.notes.iter().enumerate() {
        let escaped = n.replace('\\', "\\\\").replace('"', "\\\"");
        let _ = write!(out, ",\"note{i}\":\"{escaped}\"");
    }
    out.push('}');
    out
}

async fn run() -> Result<(), BoxError> {
    let starts = env_count("STARTUP_LATENCY_STARTS", STARTS);
    let rtts = env_count("STARTUP_LATENCY_RTTS", RTTS);
    let java_starts = env_count("STARTUP_LATENCY_JAVA_STARTS", JAVA_STARTS);
    let began = Instant::now();
    let mut report = Report::default();

    println!("startup_latency: zk-mock start → session and getData round trips");
    println!(
        "client: tokio current-thread runtime on the main thread; servers (zk-mock, TCP echo) each on their own thread + current-thread runtime"
    );
    println!(
        "warm-up: {WARMUP_STARTS} starts, {WARMUP_RTTS} round trips per series; round-trip series interleaved in blocks of {RTT_BLOCK}"
    );

    let placements = Placement::available();
    // Start → session: as scheduled, and with every thread on one CPU (a new
    // zk-mock thread inherits the pinned affinity of the thread starting it).
    for &p in placements.iter().take(2) {
        if let Err(e) = p.apply() {
            report.notes.push(format!(
                "placement {}: cannot set CPU affinity: {e}",
                p.name()
            ));
            continue;
        }
        startup_raw(&mut report, starts, p).await?;
        startup_zkc(&mut report, starts, p).await?;
    }
    Placement::Default.apply()?;
    let (req_frame, reply_frame) = round_trips(&mut report, rtts, &placements).await?;
    report.notes.push(format!(
        "getData exchange: {req_frame} B request frame, {reply_frame} B reply frame (node data {DATA_LEN} B); the TCP ping-pong uses the same sizes"
    ));
    report.notes.push(
        "[sched] = the kernel places threads; [cpu N] = every thread pinned to CPU N; [cpu C|S] = client threads on C, server threads (zk-mock, echo) on S".into(),
    );

    if java_starts == 0 {
        report
            .notes
            .push("real ZooKeeper: skipped (STARTUP_LATENCY_JAVA_STARTS=0)".into());
    } else {
        match java_ready() {
            Ok(()) => {
                if let Err(e) = real_zookeeper(&mut report, java_starts).await {
                    report.notes.push(format!("real ZooKeeper: failed: {e}"));
                }
            }
            Err(why) => report
                .notes
                .push(format!("real ZooKeeper: skipped ({why})")),
        }
    }

    println!();
    print_table(&report);
    let extra = print_targets(&report);
    println!();
    for n in &report.notes {
        println!("note: {n}");
    }
    println!("total bench time: {:.1} s", began.elapsed().as_secs_f64());
    println!("{}", json_line(&report, &extra));
    Ok(())
}
