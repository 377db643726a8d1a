//! Load and soak: the `zk-mock` binary in a process of its own, driven from
//! this one over loopback.
//!
//! 1. hold: `--sessions` sessions (default 10,000) connect at once and are
//!    kept alive with pings for `--hold` seconds;
//! 2. churn: for `--churn` seconds, waves of `--wave` sessions each set a
//!    watch, create an ephemeral node and leave: half by closeSession,
//!    half by dropping the connection (those expire after the timeout);
//! 3. settle: everything closed or expired.
//!
//! Prints the server's memory (VmRSS at the start, the peak VmHWM, VmRSS
//! after) and its own counters (sessions, connections, watches, ephemerals,
//! queued outbox bytes) at each point; exits non-zero if anything is left
//! over or a request failed.
//!
//! RSS counts what the allocator holds, not what the server does: glibc
//! keeps freed pages for reuse. `--heaptrack FILE` runs the server under
//! heaptrack (Debian's `heaptrack` package) and adds its live heap at each
//! point, from the heap's timeline, and at the end (what is still allocated
//! when the server is killed after settling).
//!
//! `cargo run --release -p benches --bin soak -- [--sessions N] [--hold S] [--churn S]`
//! (builds and finds `zk-mock` beside itself: run `cargo build --release -p zk-mock-cli` first).

use parking_lot::Mutex;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use tokio::net::TcpSocket;
use zk_mock::client::RawClient;
use zk_mock::proto::{Acl, ConnectRequest, CreateRequest, OpCode, PathWatchRequest};

#[derive(Debug, Parser)]
struct Args {
    /// Sessions held at once.
    #[arg(long, default_value_t = 10_000)]
    sessions: usize,
    /// Seconds to hold them, pinging.
    #[arg(long, default_value_t = 30)]
    hold: u64,
    /// Seconds of churn.
    #[arg(long, default_value_t = 120)]
    churn: u64,
    /// Sessions per churn wave.
    #[arg(long, default_value_t = 500)]
    wave: usize,
    /// Session timeout asked for, ms.
    #[arg(long, default_value_t = 4000)]
    timeout: i32,
    /// The server's --recorder-capacity (records of each kind it keeps;
    /// 0: none). The recorder is the one store that grows with traffic,
    /// up to this bound.
    #[arg(long)]
    recorder_capacity: Option<usize>,
    /// Run the server under heaptrack, writing its trace to FILE(.zst), and
    /// report its live heap at each point.
    #[arg(long, value_name = "FILE")]
    heaptrack: Option<PathBuf>,
}

struct Server {
    /// The `zk-mock` process, or heaptrack's script running it.
    child: Child,
    /// The `zk-mock` process's pid.
    pid: u32,
    addr: SocketAddr,
    admin: SocketAddr,
    started: Instant,
    /// Each report's label and time since the server started (s).
    reports: Mutex<Vec<(String, f64)>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SIGKILL: under heaptrack, what is still allocated is what the
        // server held at this point, not what a clean exit leaves.
        let _ = Command::new("kill")
            .args(["-KILL", &self.pid.to_string()])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pid of `parent`'s child process named `name`.
fn child_named(parent: u32, name: &str) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // pid (comm) state ppid ...
        let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
        let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == parent && comm == name).then_some(pid)
    })
}

impl Server {
    fn start(recorder_capacity: Option<usize>, heaptrack: Option<&Path>) -> Server {
        let bin = std::env::current_exe().unwrap().with_file_name("zk-mock");
        let mut command = match heaptrack {
            Some(trace) => {
                let mut c = Command::new("heaptrack");
                c.arg("-o").arg(trace).arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        let started = Instant::now();
        let mut child = command
            .args(["--port", "0", "--admin-port", "0", "--tick-time", "500"])
            .args([
                "--min-session-timeout",
                "1000",
                "--max-session-timeout",
                "20000",
            ])
            .args(["--listen-backlog", "4096"])
            .args(
                recorder_capacity
                    .map(|n| vec!["--recorder-capacity".to_string(), n.to_string()])
                    .unwrap_or_default(),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (cargo build --release -p zk-mock-cli)",
                    bin.display()
                )
            });
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut addr = None;
        let mut admin = None;
        while addr.is_none() || admin.is_none() {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "zk-mock exited");
            if line.starts_with("zk-mock listening on ") {
                addr = line.split_whitespace().nth(3).and_then(|a| a.parse().ok());
            } else if let Some(a) = line
                .trim()
                .strip_prefix("zk-mock admin interface on http://")
            {
                admin = a.parse().ok();
            }
        }
        let pid = match heaptrack {
            Some(_) => child_named(child.id(), "zk-mock").expect("zk-mock under heaptrack"),
            None => child.id(),
        };
        Server {
            child,
            pid,
            addr: addr.unwrap(),
            admin: admin.unwrap(),
            started,
            reports: Mutex::new(Vec::new()),
        }
    }

    /// VmRSS and VmHWM, in MiB.
    fn memory(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap();
        let kb = |key: &str| -> f64 {
            status
                .lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
                / 1024.0
        };
        (kb("VmRSS:"), kb("VmHWM:"))
    }

    /// The admin interface's /metrics, as text.
    fn metrics(&self) -> String {
        let mut s = std::net::TcpStream::connect(self.admin).unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
        // Only the gauges that must return to zero, and the totals.
        let pick = |key: &str| -> String {
            body.split(&format!("\"{key}\":"))
                .nth(1)
                .map(|r| r.split([',', '}']).next().unwrap_or("").to_string())
                .unwrap_or_default()
        };
        format!(
            "sessions {} connections {} watches {} ephemerals {} znodes {} outbox_bytes {} slow_readers_closed {}",
            pick("sessions"),
            pick("connections"),
            pick("watches"),
            pick("ephemerals"),
            pick("znodes"),
            pick("outbox_bytes"),
            pick("slow_readers_closed")
        )
    }
}

/// A session from one of 127.0.0.2–127.0.0.254, so that churned
/// connections' TIME_WAITs spread over many source addresses.
async fn session(server: SocketAddr, n: usize, timeout: i32) -> std::io::Result<RawClient> {
    let ip = Ipv4Addr::new(127, 0, 0, 2 + (n % 250) as u8);
    let sock = TcpSocket::new_v4()?;
    sock.bind(SocketAddr::new(IpAddr::V4(ip), 0))?;
    let stream = sock.connect(server).await?;
    stream.set_nodelay(true)?;
    let req = ConnectRequest {
        time_out: timeout,
        passwd: Some(bytes::Bytes::from_static(&[0; 16])),
        read_only: Some(false),
        ..Default::default()
    };
    let (c, resp) = RawClient::handshake_over(stream, &req).await?;
    resp.ok_or_else(|| std::io::Error::other("no session"))?;
    Ok(c)
}

fn report(label: &str, server: &Server) {
    server
        .reports
        .lock()
        .push((label.to_string(), server.started.elapsed().as_secs_f64()));
    let (rss, hwm) = server.memory();
    println!(
        "{label:<34} RSS {rss:7.1} MiB  peak {hwm:7.1} MiB  {}",
        server.metrics()
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args = Args::parse();
    let server = Server::start(args.recorder_capacity, args.heaptrack.as_deref());
    let addr = server.addr;
    tokio::time::sleep(Duration::from_millis(200)).await;
    report("baseline", &server);
    let failures = Arc::new(AtomicU64::new(0));

    // 1. hold
    let t = Instant::now();
    let mut tasks = Vec::new();
    for n in 0..args.sessions {
        tasks.push(tokio::spawn(session(addr, n, args.timeout)));
    }
    let mut held = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(c) => held.push(c),
            Err(_) => {
                failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    println!(
        "{} sessions connected in {:.2} s",
        held.len(),
        t.elapsed().as_secs_f64()
    );
    report(&format!("{} sessions held", held.len()), &server);
    let pings = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(args.hold);
    let interval = Duration::from_millis(args.timeout as u64 / 3);
    let mut pingers = Vec::new();
    for (i, mut c) in held.into_iter().enumerate() {
        let (pings, failures) = (pings.clone(), failures.clone());
        pingers.push(tokio::spawn(async move {
            // Spread the pings over the interval.
            tokio::time::sleep(interval.mul_f64((i % 1000) as f64 / 1000.0)).await;
            while Instant::now() < until {
                match c.request_raw(OpCode::Ping as i32, &[]).await {
                    Ok(r) if r.header.err == 0 => pings.fetch_add(1, Ordering::Relaxed),
                    _ => failures.fetch_add(1, Ordering::Relaxed),
                };
                tokio::time::sleep(interval).await;
            }
            c
        }));
    }
    let mut held = Vec::new();
    for p in pingers {
        held.push(p.await.unwrap());
    }
    println!(
        "held {} s: {} pings answered",
        args.hold,
        pings.load(Ordering::Relaxed)
    );
    report("after holding", &server);
    for c in held {
        let _ = c.close().await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    report("all closed", &server);

    // 2. churn
    let t = Instant::now();
    let churn_until = t + Duration::from_secs(args.churn);
    let mut waves = 0usize;
    let mut sessions = 0usize;
    while Instant::now() < churn_until {
        let mut tasks = Vec::new();
        for i in 0..args.wave {
            let n = waves * args.wave + i;
            let failures = failures.clone();
            tasks.push(tokio::spawn(async move {
                let Ok(mut c) = session(addr, n, 2000).await else {
                    failures.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                let path = format!("/churn-{n}");
                let w = c
                    .request(
                        OpCode::Exists,
                        &PathWatchRequest {
                            path: "/watched".into(),
                            watch: true,
                        },
                    )
                    .await;
                let e = c
                    .request(
                        OpCode::Create,
                        &CreateRequest {
                            path: path.into(),
                            data: Some(bytes::Bytes::from_static(b"ephemeral")),
                            acl: Acl::open_shared(),
                            flags: 1,
                        },
                    )
                    .await;
                if !matches!((&w, &e), (Ok(w), Ok(e)) if w.header.err == -101 && e.header.err == 0)
                {
                    failures.fetch_add(1, Ordering::Relaxed);
                }
                if n % 2 == 0 {
                    let _ = c.close().await;
                } // else: dropped; the session expires after 2 s
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        waves += 1;
        sessions += args.wave;
        if waves % 20 == 0 {
            report(&format!("churn: {sessions} sessions so far"), &server);
        }
    }
    println!(
        "churn: {sessions} sessions in {waves} waves over {:.0} s",
        t.elapsed().as_secs_f64()
    );
    // 3. settle: dropped sessions expire (2 s timeout, 500 ms ticks).
    tokio::time::sleep(Duration::from_secs(4)).await;
    report("settled", &server);
    let metrics = server.metrics();
    let failed = failures.load(Ordering::Relaxed);
    println!("failures: {failed}");
    if let Some(trace) = &args.heaptrack {
        let reports = std::mem::take(&mut *server.reports.lock());
        drop(server);
        heap_report(trace, &reports);
    }
    let leftover = [
        "sessions 0 ",
        "connections 0 ",
        "watches 0 ",
        "ephemerals 0 ",
        "outbox_bytes 0 ",
    ]
    .iter()
    .any(|want| !metrics.contains(want));
    if failed > 0 || leftover {
        eprintln!("soak failed: {metrics}");
        std::process::exit(1);
    }
}

/// The server's live heap at each report, from heaptrack's timeline of the
/// trace (`heaptrack_print -M`), and what was still allocated when it was
/// killed after settling.
fn heap_report(trace: &Path, reports: &[(String, f64)]) {
    let file = ["zst", "gz"]
        .iter()
        .map(|ext| PathBuf::from(format!("{}.{ext}", trace.display())))
        .find(|f| f.exists())
        .unwrap_or_else(|| trace.to_path_buf());
    let massif = file.with_extension("massif");
    let out = Command::new("heaptrack_print")
        .arg(&file)
        .arg("-M")
        .arg(&massif)
        .args(["--print-peaks", "0", "--print-allocators", "0"])
        .args(["--print-temporary", "0", "--print-leaks", "0"])
        .output()
        .expect("heaptrack_print");
    let summary = String::from_utf8_lossy(&out.stdout);
    let timeline = std::fs::read_to_string(&massif).unwrap_or_default();
    // (seconds, bytes) per snapshot.
    let mut snapshots = Vec::new();
    let mut time = None;
    for line in timeline.lines() {
        if let Some(t) = line.strip_prefix("time=") {
            time = t.parse::<f64>().ok();
        } else if let (Some(b), Some(t)) = (line.strip_prefix("mem_heap_B="), time) {
            if let Ok(b) = b.parse::<f64>() {
                snapshots.push((t, b));
            }
        }
    }
    println!("live heap (heaptrack, {}):", file.display());
    for (label, at) in reports {
        let live = snapshots
            .iter()
            .take_while(|(t, _)| t <= at)
            .last()
            .map_or(0.0, |(_, b)| b / 1048576.0);
        println!("  {label:<34} {live:7.1} MiB");
    }
    for line in summary.lines() {
        if line.starts_with("peak heap memory consumption")
            || line.starts_with("total memory leaked")
        {
            println!("  {line}");
        }
    }
}
