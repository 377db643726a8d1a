//! Apache ZooKeeper itself, for differential tests and benchmarks: a
//! standalone server in a child JVM, on a free loopback port, with a fresh
//! data directory (feature `real`).
//!
//! ```no_run
//! use zk_mock::real::RealZk;
//!
//! let real = RealZk::builder().tick_time(200).start()?;
//! println!("compare against {}", real.connect_string());
//! # Ok::<(), zk_mock::real::RealZkError>(())
//! ```
//!
//! The JVM runs under a small `sh` wrapper that holds the read end of a pipe
//! whose write end this process keeps: when the [`RealZk`] is dropped, or this
//! process ends for any reason (panic, abort, SIGKILL), the pipe closes, and
//! the wrapper kills the JVM and removes its directory. A server kept in a
//! `static` (see [`RealZk::shared`]) so still dies with the test binary.
//!
//! Where things are found:
//! - `ZK_CLASSPATH`: the JVM classpath (default: Debian's
//!   `/usr/share/java/zookeeper.jar`, whose manifest pulls in its
//!   dependencies, plus `slf4j-simple.jar` for a readable log; else
//!   `/usr/share/java/*`). `apt-get install zookeeper` installs 3.8.0.
//! - `ZK_JAVA`: the `java` binary (default `/usr/bin/java`, else `java` on
//!   `PATH`).

// A start that fails carries the server's log in its error: large, rare,
// and the whole point of the error.
#![allow(clippy::result_large_err)]

use std::fmt;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Why a real ZooKeeper could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RealZkError {
    /// The files for it could not be written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The JVM did not serve within the startup timeout, or exited.
    #[error("real ZooKeeper did not start on {addr} ({why}; java {java}, classpath {classpath}); log:\n{log}")]
    DidNotStart {
        /// Its client address.
        addr: SocketAddr,
        /// What was seen.
        why: String,
        /// The `java` binary used.
        java: String,
        /// The classpath used.
        classpath: String,
        /// The end of its log.
        log: String,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> RealZkError {
    let what = what.into();
    move |source| RealZkError::Io { what, source }
}

/// How to start a [`RealZk`]. The defaults start fast and suit
/// differential tests; benchmarks turn [`quick_jit`](Self::quick_jit) and
/// [`sync_writes`](Self::sync_writes) back on.
#[derive(Debug, Clone)]
pub struct RealZkBuilder {
    tick_time: u64,
    cfg: Vec<String>,
    jvm_args: Vec<String>,
    heap: Option<String>,
    quick_jit: bool,
    sync_writes: bool,
    startup_timeout: Duration,
}

impl Default for RealZkBuilder {
    fn default() -> Self {
        RealZkBuilder {
            tick_time: 2000,
            cfg: Vec::new(),
            jvm_args: Vec::new(),
            heap: Some("256m".into()),
            quick_jit: true,
            sync_writes: false,
            startup_timeout: Duration::from_secs(60),
        }
    }
}

impl RealZkBuilder {
    /// `tickTime` in ms (default 2000).
    pub fn tick_time(mut self, ms: u64) -> Self {
        self.tick_time = ms;
        self
    }

    /// One more `zoo.cfg` line, such as `maxClientCnxns=0`.
    pub fn cfg(mut self, line: impl Into<String>) -> Self {
        self.cfg.push(line.into());
        self
    }

    /// One more JVM argument, such as `-Dzookeeper.extendedTypesEnabled=true`.
    pub fn jvm_arg(mut self, arg: impl Into<String>) -> Self {
        self.jvm_args.push(arg.into());
        self
    }

    /// The JVM's `-Xmx` (default `256m`; `None`: the JVM's default).
    pub fn heap(mut self, max: Option<&str>) -> Self {
        self.heap = max.map(str::to_string);
        self
    }

    /// Stop the JIT at its first tier (`-XX:TieredStopAtLevel=1`, default
    /// on): the JVM starts sooner and runs slower. Off for throughput.
    pub fn quick_jit(mut self, on: bool) -> Self {
        self.quick_jit = on;
        self
    }

    /// Whether the transaction log is fsynced (`zookeeper.forceSync`,
    /// default off: the mock keeps no log either).
    pub fn sync_writes(mut self, on: bool) -> Self {
        self.sync_writes = on;
        self
    }

    /// How long [`start`](Self::start) waits for the server to serve
    /// (default 60 s).
    pub fn startup_timeout(mut self, d: Duration) -> Self {
        self.startup_timeout = d;
        self
    }

    /// Starts the server and waits until it serves requests; tries up to
    /// three times, on a new port each time.
    ///
    /// # Errors
    /// [`RealZkError`], with the end of the server's log.
    pub fn start(self) -> Result<RealZk, RealZkError> {
        let mut last = None;
        for _ in 0..3 {
            let attempt = self.spawn().and_then(|zk| {
                zk.wait_serving(self.startup_timeout)?;
                Ok(zk)
            });
            match attempt {
                Ok(zk) => return Ok(zk),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("three attempts"))
    }

    /// Starts the JVM and returns at once, before it serves: for measuring
    /// its startup ([`RealZk::serving`] tells when it is up).
    ///
    /// # Errors
    /// [`RealZkError::Io`] if its directory, config or process cannot be made.
    pub fn spawn(&self) -> Result<RealZk, RealZkError> {
        let port = free_port().map_err(io("picking a free port"))?;
        let dir = member_dir(port)?;
        let cfg = format!(
            "tickTime={}\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n",
            self.tick_time,
            dir.join("data").display()
        );
        self.spawn_in(
            dir,
            cfg,
            port,
            "org.apache.zookeeper.server.ZooKeeperServerMain",
        )
    }

    /// Starts `main` with `cfg` (plus the builder's lines) in `dir`, serving
    /// clients on `port`.
    fn spawn_in(
        &self,
        dir: PathBuf,
        mut text: String,
        port: u16,
        main: &str,
    ) -> Result<RealZk, RealZkError> {
        let cfg = dir.join("zoo.cfg");
        for line in &self.cfg {
            text.push_str(line);
            text.push('\n');
        }
        std::fs::write(&cfg, text).map_err(io(format!("writing {}", cfg.display())))?;
        let (child, stdin) = self.launch(&dir, main)?;
        Ok(RealZk {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            log: dir.join("zookeeper.log"),
            dir,
            child: Mutex::new(child),
            stdin,
            builder: self.clone(),
            main: main.to_string(),
            stopped: Vec::new(),
        })
    }

    /// Starts `main` on `dir`'s zoo.cfg in the wrapper, which logs to
    /// `dir/zookeeper.log`: the wrapper, and the pipe whose end stops it.
    fn launch(&self, dir: &Path, main: &str) -> Result<(Child, Option<ChildStdin>), RealZkError> {
        let log = dir.join("zookeeper.log");
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(WRAPPER)
            .arg("sh")
            .arg(&log)
            .arg(dir)
            .arg(java())
            .arg("-XX:+UseSerialGC")
            .arg("-Dzookeeper.4lw.commands.whitelist=*")
            .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=info")
            .arg("-Dorg.slf4j.simpleLogger.showDateTime=true");
        if self.quick_jit {
            cmd.arg("-XX:TieredStopAtLevel=1");
        }
        if let Some(heap) = &self.heap {
            cmd.arg(format!("-Xmx{heap}"));
        }
        if !self.sync_writes {
            cmd.arg("-Dzookeeper.forceSync=no");
        }
        let mut child = cmd
            .args(&self.jvm_args)
            .arg("-cp")
            .arg(classpath())
            .arg(main)
            .arg(dir.join("zoo.cfg"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(io("spawning sh and java"))?;
        let stdin = child.stdin.take();
        Ok((child, stdin))
    }
}

/// A fresh directory (with `data/`) for one server; the wrapper removes it.
fn member_dir(port: u16) -> Result<PathBuf, RealZkError> {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "zk-real-{}-{}-{port}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let data = dir.join("data");
    std::fs::create_dir_all(&data).map_err(io(format!("mkdir {}", data.display())))?;
    Ok(dir)
}

/// A real ZooKeeper ensemble on loopback (`QuorumPeerMain`, one JVM per
/// server, `server.N` lines with each server's quorum, election and client
/// ports): what the conformance suite judges zk-mock's ensemble against.
/// Server `i` has myid `i + 1`. Dropping it stops every JVM.
#[derive(Debug)]
pub struct RealEnsemble {
    builder: RealZkBuilder,
    /// (client, quorum, election) ports of each server.
    ports: Vec<(u16, u16, u16)>,
    /// The servers whose zoo.cfg names them as participants (all, by
    /// default); see [`start_with_participants`](Self::start_with_participants).
    participants: Vec<usize>,
    members: Vec<Option<RealZk>>,
}

impl RealEnsemble {
    /// Starts `n` servers with `builder`'s settings (its `cfg` lines and JVM
    /// arguments go to every server; e.g. `.jvm_arg("-Dreadonlymode.enabled=true")`)
    /// and waits until each one leads or follows.
    ///
    /// # Errors
    /// [`RealZkError`] if one does not start, with its log.
    pub fn start(n: usize, builder: RealZkBuilder) -> Result<RealEnsemble, RealZkError> {
        RealEnsemble::start_with_participants(n, &(0..n).collect::<Vec<_>>(), builder)
    }

    /// Starts `n` servers of which only `participants` vote: each server's
    /// zoo.cfg names the participants, and a server that is not one also
    /// names itself, as an observer (zookeeper-client's
    /// `test_update_ensemble` layout; add `standaloneEnabled=false` for a
    /// single participant). Waits until each leads, follows or observes.
    ///
    /// # Errors
    /// [`RealZkError`] if one does not start, with its log.
    pub fn start_with_participants(
        n: usize,
        participants: &[usize],
        builder: RealZkBuilder,
    ) -> Result<RealEnsemble, RealZkError> {
        let mut ports = Vec::new();
        // Hold every listener until all ports are picked, so none repeats.
        let mut held = Vec::new();
        for _ in 0..n {
            let mut three = [0u16; 3];
            for p in &mut three {
                let l = TcpListener::bind("127.0.0.1:0").map_err(io("picking a free port"))?;
                *p = l.local_addr().map_err(io("picking a free port"))?.port();
                held.push(l);
            }
            ports.push((three[0], three[1], three[2]));
        }
        drop(held);
        let mut e = RealEnsemble {
            builder,
            ports,
            participants: participants.to_vec(),
            members: (0..n).map(|_| None).collect(),
        };
        for i in 0..n {
            e.members[i] = Some(e.spawn(i)?);
        }
        for i in 0..n {
            e.wait_mode(i)?;
        }
        Ok(e)
    }

    fn spawn(&self, i: usize) -> Result<RealZk, RealZkError> {
        let (client, _, _) = self.ports[i];
        let dir = member_dir(client)?;
        let data = dir.join("data");
        std::fs::write(data.join("myid"), format!("{}\n", i + 1))
            .map_err(io(format!("writing {}/myid", data.display())))?;
        let mut cfg = format!(
            "tickTime={}\ninitLimit=10\nsyncLimit=5\ndataDir={}\nadmin.enableServer=false\n",
            self.builder.tick_time,
            data.display()
        );
        for j in 0..self.ports.len() {
            if self.participants.contains(&j) {
                cfg.push_str(&self.server_line(j, "participant"));
                cfg.push('\n');
            } else if j == i {
                cfg.push_str(&self.server_line(j, "observer"));
                cfg.push('\n');
            }
        }
        self.builder.spawn_in(
            dir,
            cfg,
            client,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        )
    }

    /// Server `i`'s line in a zoo.cfg or a reconfig, with this role
    /// (`participant` or `observer`):
    /// `server.<i+1>=127.0.0.1:<quorum>:<election>:<role>;127.0.0.1:<client>`.
    pub fn server_line(&self, i: usize, role: &str) -> String {
        let (c, q, el) = self.ports[i];
        format!("server.{}=127.0.0.1:{q}:{el}:{role};127.0.0.1:{c}", i + 1)
    }

    /// Waits until server `i` leads, follows or observes.
    fn wait_mode(&self, i: usize) -> Result<(), RealZkError> {
        let deadline = Instant::now() + self.builder.startup_timeout;
        loop {
            if matches!(
                self.mode(i).as_deref(),
                Some("leader" | "follower" | "observer")
            ) {
                return Ok(());
            }
            // Only a JVM that exited ends the wait early: a peer that logs
            // "shutting down" may be stopping a server inside a JVM that goes
            // on (see `died`), and it leads or follows soon after.
            let m = self.members[i].as_ref();
            let why = if m.is_none_or(RealZk::jvm_exited) {
                Some(format!("server {i}'s JVM exited"))
            } else if Instant::now() > deadline {
                Some(format!(
                    "server {i} neither leads nor follows after {:?}",
                    self.builder.startup_timeout
                ))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(RealZkError::DidNotStart {
                    addr: self.addr(i),
                    why,
                    java: java(),
                    classpath: classpath(),
                    log: m.map(|m| m.log_tail(60)).unwrap_or_default(),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Server `i`'s client address.
    pub fn addr(&self, i: usize) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.ports[i].0))
    }

    /// Every server's client address, comma-separated.
    pub fn connect_string(&self) -> String {
        (0..self.ports.len())
            .map(|i| self.addr(i).to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// What `srvr` says of server `i`'s mode (`leader`, `follower`,
    /// `read-only`), or `None` if it does not serve.
    pub fn mode(&self, i: usize) -> Option<String> {
        let out = four_letter(self.addr(i), b"srvr")?;
        out.lines()
            .find_map(|l| l.strip_prefix("Mode: "))
            .map(str::to_string)
    }

    /// The server that leads, if one does.
    pub fn leader(&self) -> Option<usize> {
        (0..self.ports.len()).find(|&i| self.mode(i).as_deref() == Some("leader"))
    }

    /// Stops server `i`'s JVM (its clients' connections drop).
    pub fn kill(&mut self, i: usize) {
        drop(self.members[i].take());
    }

    /// Starts server `i` again (a fresh data directory: it syncs from the
    /// leader) and waits until it leads, follows or observes. A server whose
    /// JVM exits while it rejoins is started again, twice at most: 3.8.0
    /// can die syncing with a leader that is taking writes (ZOOKEEPER-4394,
    /// a NullPointerException in `Learner.syncWithLeader` when a COMMIT
    /// comes before UPTODATE; fixed in 3.8.1).
    ///
    /// # Errors
    /// [`RealZkError`] if it does not come back.
    pub fn restart(&mut self, i: usize) -> Result<(), RealZkError> {
        let mut attempt = 0;
        loop {
            if self.members[i].is_none() {
                self.members[i] = Some(self.spawn(i)?);
            }
            match self.wait_mode(i) {
                Ok(()) => return Ok(()),
                Err(_) if attempt < 2 && self.members[i].as_ref().is_some_and(RealZk::died) => {
                    tracing::warn!(
                        server = i,
                        attempt,
                        "real ZooKeeper server exited while rejoining (ZOOKEEPER-4394?); starting it again"
                    );
                    self.members[i] = None;
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Pauses server `i`'s JVM ([`RealZk::pause`]): it stays out of the
    /// quorum, with its sessions and connections, until
    /// [`resume`](Self::resume). False if it is not running.
    pub fn pause(&self, i: usize) -> bool {
        self.members[i].as_ref().is_some_and(RealZk::pause)
    }

    /// Lets server `i`'s paused JVM run again ([`RealZk::resume`]).
    pub fn resume(&self, i: usize) -> bool {
        self.members[i].as_ref().is_some_and(RealZk::resume)
    }

    /// Starts server `i` again without waiting (it may have no quorum to join).
    ///
    /// # Errors
    /// [`RealZkError::Io`] if it cannot be spawned.
    pub fn spawn_again(&mut self, i: usize) -> Result<(), RealZkError> {
        if self.members[i].is_none() {
            self.members[i] = Some(self.spawn(i)?);
        }
        Ok(())
    }

    /// The last `n` lines of server `i`'s log.
    pub fn log_tail(&self, i: usize, n: usize) -> String {
        self.members[i]
            .as_ref()
            .map(|m| m.log_tail(n))
            .unwrap_or_default()
    }
}

/// Sends a four-letter word; `None` if the connection fails.
fn four_letter(addr: SocketAddr, word: &[u8]) -> Option<String> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(500)).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    s.write_all(word).ok()?;
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    Some(out)
}

/// Runs the JVM (`$@`) with its output in `$1`, its pid in `$2/jvm.pid`, and
/// kills it and removes `$2` once stdin closes.
const WRAPPER: &str = r#"log="$1"; dir="$2"; shift 2
(
  "$@" </dev/null >"$log" 2>&1 &
  echo $! >"$dir/jvm.pid"
  wait $!
  echo "zk-real: JVM exited with status $?" >>"$log"
) &
read _ || true
kill "$(cat "$dir/jvm.pid" 2>/dev/null)" 2>/dev/null
wait
case "$dir" in */zk-real-*) rm -rf "$dir" ;; esac
"#;

/// A running Apache ZooKeeper; dropping it kills the JVM and removes its
/// directory.
pub struct RealZk {
    addr: SocketAddr,
    dir: PathBuf,
    log: PathBuf,
    child: Mutex<Child>,
    stdin: Option<ChildStdin>,
    /// How to start it again on its directory ([`restart`](RealZk::restart)):
    /// the settings and the main class.
    builder: RealZkBuilder,
    main: String,
    /// The wrappers of JVMs a restart stopped: each removes the directory
    /// once its pipe closes, so they are kept until the server is dropped.
    stopped: Vec<(Child, Option<ChildStdin>)>,
}

impl fmt::Debug for RealZk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RealZk")
            .field("addr", &self.addr)
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl RealZk {
    /// A builder with the defaults.
    pub fn builder() -> RealZkBuilder {
        RealZkBuilder::default()
    }

    /// Starts one with the defaults; see [`RealZkBuilder::start`].
    ///
    /// # Errors
    /// As for [`RealZkBuilder::start`].
    pub fn start() -> Result<RealZk, RealZkError> {
        RealZkBuilder::default().start()
    }

    /// One server with the defaults for the whole process, started on first
    /// use and stopped when the process ends.
    ///
    /// # Panics
    /// If it cannot start (the message has its log).
    pub fn shared() -> &'static RealZk {
        static SHARED: OnceLock<RealZk> = OnceLock::new();
        SHARED.get_or_init(|| RealZk::start().unwrap_or_else(|e| panic!("{e}")))
    }

    /// Whether Java and ZooKeeper's jars are here.
    pub fn available() -> bool {
        let cp = classpath();
        let jars = cp
            .split(':')
            .next()
            .is_some_and(|first| first.ends_with('*') || Path::new(first).exists());
        jars && Command::new(java())
            .arg("-version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Its client address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its connect string, `127.0.0.1:PORT`.
    pub fn connect_string(&self) -> String {
        self.addr.to_string()
    }

    /// The JVM's process id, once the wrapper has written it.
    pub fn jvm_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.dir.join("jvm.pid"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    /// Whether it serves requests: `srvr` answers with a `Zxid:` line only
    /// then (a four-letter word creates no session and consumes no zxid).
    pub fn serving(&self) -> bool {
        let Ok(mut s) = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        if s.write_all(b"srvr").is_err() {
            return false;
        }
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out.contains("Zxid:")
    }

    /// Waits until it serves, for at most `timeout`.
    ///
    /// # Errors
    /// [`RealZkError::DidNotStart`] if it exits or the time runs out.
    pub fn wait_serving(&self, timeout: Duration) -> Result<(), RealZkError> {
        let deadline = Instant::now() + timeout;
        loop {
            if self.serving() {
                return Ok(());
            }
            let why = if self.died() {
                Some("the JVM exited".to_string())
            } else if let Some(status) = self.exited() {
                Some(format!("its wrapper exited with {status}"))
            } else if Instant::now() > deadline {
                Some(format!("not serving after {timeout:?}"))
            } else {
                None
            };
            if let Some(why) = why {
                return Err(RealZkError::DidNotStart {
                    addr: self.addr,
                    why,
                    java: java(),
                    classpath: classpath(),
                    log: self.log_tail(60),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the JVM (SIGKILL, as a crash) and waits until it is gone; its
    /// directory stays, for [`restart`](Self::restart).
    pub fn kill(&mut self) {
        if let Some(pid) = self.jvm_pid() {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.died() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the JVM without ending it (SIGSTOP): it answers nothing and
    /// its peers hear nothing from it, while its state, its sessions and
    /// its clients' connections stay, until [`resume`](Self::resume). On
    /// an ensemble, a way to keep a server out of the quorum as a network
    /// partition would. False if the JVM's process id is not known.
    pub fn pause(&self) -> bool {
        self.signal("-STOP")
    }

    /// Lets a JVM stopped by [`pause`](Self::pause) run again (SIGCONT).
    pub fn resume(&self) -> bool {
        self.signal("-CONT")
    }

    fn signal(&self, sig: &str) -> bool {
        self.jvm_pid().is_some_and(|pid| {
            Command::new("kill")
                .arg(sig)
                .arg(pid.to_string())
                .status()
                .is_ok_and(|s| s.success())
        })
    }

    /// Starts the JVM again on the same port and data directory (after
    /// [`kill`](Self::kill), or killing it first), as a restarted standalone
    /// server, which loads its snapshot and log; returns once it serves.
    ///
    /// # Errors
    /// [`RealZkError`] if it does not come back, with its log.
    pub fn restart(&mut self) -> Result<(), RealZkError> {
        if !self.died() {
            self.kill();
        }
        // The new JVM's log starts afresh (the old one's is kept beside it),
        // so that `died` speaks of the new JVM only.
        let _ = std::fs::rename(&self.log, self.dir.join("zookeeper.before-restart.log"));
        let (child, stdin) = self.builder.launch(&self.dir, &self.main)?;
        let old = std::mem::replace(
            self.child
                .get_mut()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            child,
        );
        let old_stdin = std::mem::replace(&mut self.stdin, stdin);
        self.stopped.push((old, old_stdin));
        self.wait_serving(self.builder.startup_timeout)
    }

    /// The wrapper's exit status, if it has exited.
    pub fn exited(&self) -> Option<ExitStatus> {
        let mut c = crate::core::lock(&self.child);
        c.try_wait().ok().flatten()
    }

    /// Whether its log shows the JVM has exited, or a ZooKeeper server in it
    /// has shut down ("shutting down"). A quorum peer also logs that while its
    /// JVM goes on: when it stops the read-only server it started after
    /// looking for a leader for two seconds (`readonlymode.enabled`), or its
    /// follower's server after an error. [`jvm_exited`](Self::jvm_exited)
    /// tells the JVM's exit alone.
    pub fn died(&self) -> bool {
        self.jvm_exited() || {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            text.contains("shutting down")
        }
    }

    /// Whether its log shows the JVM has exited (or is exiting: ZooKeeper
    /// logs "Severe unrecoverable error" before it calls `System.exit`).
    pub fn jvm_exited(&self) -> bool {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.contains("zk-real: JVM exited") || text.contains("Severe unrecoverable error")
    }

    /// The last `n` lines of its log.
    pub fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

impl Drop for RealZk {
    fn drop(&mut self) {
        // Closing the pipe makes the wrapper kill the JVM and remove the directory.
        drop(self.stdin.take());
        let c = self
            .child
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = c.wait();
        for (mut c, stdin) in self.stopped.drain(..) {
            drop(stdin);
            let _ = c.wait();
        }
    }
}

fn classpath() -> String {
    if let Ok(cp) = std::env::var("ZK_CLASSPATH") {
        return cp;
    }
    let jar = Path::new("/usr/share/java/zookeeper.jar");
    let simple = Path::new("/usr/share/java/slf4j-simple.jar");
    match (jar.exists(), simple.exists()) {
        (true, true) => format!("{}:{}", jar.display(), simple.display()),
        (true, false) => jar.display().to_string(),
        _ => "/usr/share/java/*".to_string(),
    }
}

fn java() -> String {
    if let Ok(j) = std::env::var("ZK_JAVA") {
        return j;
    }
    if Path::new("/usr/bin/java").exists() {
        "/usr/bin/java".into()
    } else {
        "java".into()
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}
