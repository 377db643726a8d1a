//! A real Apache ZooKeeper 3.8 standalone server in a child JVM.
//!
//! The JVM runs under a tiny `sh` wrapper that holds the read end of a pipe
//! whose write end is this process's `ChildStdin`: when the handle is dropped,
//! or this test binary exits for any reason (panic, abort, SIGKILL), the pipe
//! closes, `read` returns and the wrapper kills the JVM and removes its data
//! directory. So the shared instance (a `static`, never dropped) still dies
//! with the test binary.
//!
//! Where to find things:
//! - `ZK_CLASSPATH`: the JVM classpath (default: Debian's
//!   `/usr/share/java/zookeeper.jar`, whose manifest pulls in its dependencies,
//!   plus `slf4j-simple.jar` for a readable log; else `/usr/share/java/*`).
//! - `ZK_JAVA`: the `java` binary (default `/usr/bin/java`, else `java` on PATH).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A running real ZooKeeper.
#[derive(Debug)]
pub(crate) struct RealZk {
    addr: SocketAddr,
    log: PathBuf,
    child: std::sync::Mutex<Child>,
    stdin: Option<ChildStdin>,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);
static SHARED: OnceLock<RealZk> = OnceLock::new();

/// The real server shared by every case of this test binary (started on first use).
pub(crate) fn shared() -> &'static RealZk {
    SHARED.get_or_init(|| RealZk::start().unwrap_or_else(|e| panic!("{e}")))
}

fn classpath() -> String {
    if let Ok(cp) = std::env::var("ZK_CLASSPATH") {
        return cp;
    }
    let jar = Path::new("/usr/share/java/zookeeper.jar");
    let simple = Path::new("/usr/share/java/slf4j-simple.jar");
    if jar.exists() {
        if simple.exists() {
            return format!("{}:{}", jar.display(), simple.display());
        }
        return jar.display().to_string();
    }
    "/usr/share/java/*".to_string()
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

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().unwrap().port()
}

impl RealZk {
    /// Starts a fresh server (new data directory, free port) and waits until it
    /// serves requests. Retries on another port if the first attempt fails.
    pub(crate) fn start() -> Result<RealZk, String> {
        RealZk::start_with(&[])
    }

    /// [`start`](Self::start) with extra JVM system properties (`-Dkey=value`);
    /// an entry `cfg:key=value` is a `zoo.cfg` line instead.
    pub(crate) fn start_with(props: &[String]) -> Result<RealZk, String> {
        let mut last = String::new();
        for _ in 0..3 {
            match RealZk::try_start(props) {
                Ok(z) => return Ok(z),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn try_start(props: &[String]) -> Result<RealZk, String> {
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!(
            "zk-conformance-{}-{}-{}",
            std::process::id(),
            n,
            free_port()
        ));
        let data = dir.join("data");
        std::fs::create_dir_all(&data).map_err(|e| format!("mkdir {}: {e}", data.display()))?;
        let port = free_port();
        let cfg = dir.join("zoo.cfg");
        std::fs::write(
            &cfg,
            format!(
                "tickTime=2000\ndataDir={}\nclientPort={port}\nadmin.enableServer=false\n{}",
                data.display(),
                props
                    .iter()
                    .filter_map(|p| p.strip_prefix("cfg:"))
                    .map(|line| format!("{line}\n"))
                    .collect::<String>()
            ),
        )
        .map_err(|e| format!("write zoo.cfg: {e}"))?;
        let log = dir.join("zookeeper.log");
        let script = r#"log="$1"; dir="$2"; shift 2
(
  "$@" </dev/null >"$log" 2>&1 &
  echo $! >"$dir/jvm.pid"
  wait $!
  echo "zk-conformance: JVM exited with status $?" >>"$log"
) &
read _ || true
kill "$(cat "$dir/jvm.pid" 2>/dev/null)" 2>/dev/null
wait
case "$dir" in */zk-conformance-*) rm -rf "$dir" ;; esac
"#;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg("sh")
            .arg(&log)
            .arg(&dir)
            .arg(java())
            .arg("-XX:+UseSerialGC")
            .arg("-XX:TieredStopAtLevel=1")
            .arg("-Xmx256m")
            .arg("-Dzookeeper.4lw.commands.whitelist=*")
            .arg("-Dzookeeper.forceSync=no")
            .arg("-Dorg.slf4j.simpleLogger.defaultLogLevel=info")
            .arg("-Dorg.slf4j.simpleLogger.showDateTime=true")
            .args(props.iter().filter(|p| !p.starts_with("cfg:")))
            .arg("-cp")
            .arg(classpath())
            .arg("org.apache.zookeeper.server.ZooKeeperServerMain")
            .arg(&cfg)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot spawn sh/java: {e}"))?;
        let stdin = child.stdin.take();
        let zk = RealZk {
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            log,
            child: std::sync::Mutex::new(child),
            stdin,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if zk.serving() {
                return Ok(zk);
            }
            if zk.died() {
                return Err(format!(
                    "real ZooKeeper did not start (java {}, classpath {}); log:\n{}",
                    java(),
                    classpath(),
                    zk.log_tail(60)
                ));
            }
            if let Some(status) = zk.exited() {
                return Err(format!(
                    "real ZooKeeper exited during startup ({status}); classpath {}; log:\n{}",
                    classpath(),
                    zk.log_tail(60)
                ));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "real ZooKeeper did not start within 60 s on {}; log:\n{}",
                    zk.addr,
                    zk.log_tail(60)
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `srvr` answers with a `Zxid:` line only once the server serves requests
    /// (a four-letter word creates no session and consumes no zxid).
    fn serving(&self) -> bool {
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

    /// The exit status, if the server has died.
    pub(crate) fn exited(&self) -> Option<std::process::ExitStatus> {
        let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        // The wrapper shell outlives the JVM only while it waits on stdin, so
        // look for the JVM's death in the log instead.
        if let Ok(Some(s)) = c.try_wait() {
            return Some(s);
        }
        None
    }

    /// Whether the log shows the JVM has shut down.
    pub(crate) fn died(&self) -> bool {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.contains("zk-conformance: JVM exited")
            || text.contains("Severe unrecoverable error")
            || text.contains("shutting down")
    }

    /// The client address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The last `n` lines of the server's log.
    pub(crate) fn log_tail(&self, n: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(n)..].join("\n")
    }
}

impl Drop for RealZk {
    fn drop(&mut self) {
        // Closing the pipe makes the wrapper kill the JVM and remove the directory.
        drop(self.stdin.take());
        let c = self.child.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = c.wait();
    }
}
