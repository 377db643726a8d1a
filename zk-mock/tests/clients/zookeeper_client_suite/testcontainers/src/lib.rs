//! The part of the `testcontainers` API that `zookeeper-client`'s
//! tests/zookeeper.rs uses, backed by `zk-mock` processes instead of Docker.
//!
//! `Cli::run` reads what the test put in its "image": the tag (`3.3` and
//! `3.4` ask for an old server: `--compat 3.8`, notifications without
//! zxids; anything else is 3.9: `--compat 3.9`), the JVM flags in
//! `SERVER_JVMFLAGS` (super digest, extended types, container check
//! interval) and a mounted zoo.cfg. A zoo.cfg with `server.N` lines (host
//! networking, a `myid` in the mounted data directory) is one server of an
//! ensemble: the first of its "containers" reads every member's zoo.cfg
//! (they share the Cluster's directory) and starts one `zk-mock --servers
//! N` on the client ports the lines name, with the leader's lines as its
//! starting membership (`--membership`: a server named only in its own
//! zoo.cfg, as an observer, does not vote), and each container is one of
//! its servers — `stop` and `start` kill and restart it through the admin
//! interface, and its log is the binary's log lines about it. Anything
//! zk-mock cannot be — SASL enforcement, TLS — panics with "zk-mock cannot
//! run this test", so such a test fails loudly instead of passing against
//! the wrong server.

use std::io::{BufRead, BufReader, Read, Write};
use std::marker::PhantomData;
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

fn unsupported(what: &str) -> ! {
    panic!("zk-mock cannot run this test: {what}")
}

/// How the test waits for its server; zk-mock serves before it says where.
#[derive(Debug, Clone)]
pub enum WaitFor {
    /// Docker's health check.
    Healthcheck,
}

/// Docker's health check (ignored: the mock is ready when it prints its port).
#[derive(Debug, Clone, Default)]
pub struct Healthcheck {
    cmd: Vec<String>,
    interval: Option<Duration>,
    retries: Option<u32>,
}

impl Healthcheck {
    pub fn with_cmd<S: AsRef<str>>(mut self, cmd: impl IntoIterator<Item = S>) -> Self {
        self.cmd = cmd.into_iter().map(|s| s.as_ref().to_string()).collect();
        self
    }
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = Some(interval);
        self
    }
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = Some(retries);
        self
    }
}

/// `zookeeper:<tag>` with its environment.
#[derive(Debug, Clone)]
pub struct GenericImage {
    name: String,
    tag: String,
    env: Vec<(String, String)>,
}

impl GenericImage {
    pub fn new(name: impl Into<String>, tag: impl Into<String>) -> Self {
        GenericImage {
            name: name.into(),
            tag: tag.into(),
            env: Vec::new(),
        }
    }
    pub fn with_env_var(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
    pub fn with_healthcheck(self, _check: Healthcheck) -> Self {
        self
    }
    pub fn with_wait_for(self, _wait: WaitFor) -> Self {
        self
    }
}

/// An image with volumes and a network.
#[derive(Debug, Clone)]
pub struct RunnableImage<I> {
    image: I,
    volumes: Vec<(String, String)>,
    network: Option<String>,
}

impl<I> From<I> for RunnableImage<I> {
    fn from(image: I) -> Self {
        RunnableImage {
            image,
            volumes: Vec::new(),
            network: None,
        }
    }
}

impl<I> RunnableImage<I> {
    pub fn with_volume(mut self, (source, dest): (impl Into<String>, impl Into<String>)) -> Self {
        self.volumes.push((source.into(), dest.into()));
        self
    }
    pub fn with_network(mut self, network: impl Into<String>) -> Self {
        self.network = Some(network.into());
        self
    }
}

/// One ensemble server's log: the binary's log lines about it.
#[derive(Debug)]
pub struct LogStream {
    log: Option<(Arc<Log>, usize)>,
}

impl LogStream {
    /// Waits (up to a minute) until a line about this server contains `message`.
    pub fn wait_for_message(&self, message: &str) -> Result<(), String> {
        let Some((log, index)) = &self.log else {
            unsupported(&format!("waiting for the log message {message:?} of a standalone server"))
        };
        let tag = format!("server={index}");
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut lines = log.lines.lock().unwrap();
        loop {
            if lines.iter().any(|l| l.contains(message) && l.contains(&tag)) {
                return Ok(());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(format!("no log line {message:?} for server {index} within a minute"));
            }
            lines = log.grew.wait_timeout(lines, left).unwrap().0;
        }
    }
}

/// The lines an ensemble's binary has logged so far.
#[derive(Debug, Default)]
pub struct Log {
    lines: Mutex<Vec<String>>,
    grew: Condvar,
}

/// One `zk-mock --servers N` serving every "container" of an ensemble.
#[derive(Debug)]
struct Ensemble {
    child: Mutex<Child>,
    admin: SocketAddr,
    log: Arc<Log>,
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        let mut c = self.child.lock().unwrap();
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Ensemble {
    /// `POST /servers/{index}/{verb}` on its admin interface.
    fn server_verb(&self, index: usize, verb: &str) {
        let mut s = TcpStream::connect(self.admin).expect("the admin interface");
        let req = format!(
            "POST /servers/{index}/{verb} HTTP/1.1\r\nhost: localhost\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        // 409: it already was (stopped twice); anything else is a bug here.
        if !(out.starts_with("HTTP/1.1 200") || out.starts_with("HTTP/1.1 409")) {
            panic!("zk-mock admin {verb} of server {index}: {out}");
        }
    }
}

/// The ensembles running, by their Cluster's directory, with their first
/// client port; a container holds its ensemble, and the last one dropped
/// stops it.
#[allow(clippy::type_complexity)]
static ENSEMBLES: Mutex<Vec<(std::path::PathBuf, u16, std::sync::Weak<Ensemble>)>> =
    Mutex::new(Vec::new());

/// A running `zk-mock` (or one server of an ensemble); stopped on drop.
#[derive(Debug)]
pub struct Container<'a, I> {
    args: Vec<String>,
    port: u16,
    child: Mutex<Option<Child>>,
    member: Option<(Arc<Ensemble>, usize)>,
    _image: PhantomData<&'a I>,
}

fn spawn(args: &[String], port: u16) -> (Child, u16) {
    let bin = std::env::var("ZK_MOCK_BIN").expect("ZK_MOCK_BIN: the zk-mock binary to run");
    let mut child = Command::new(&bin)
        .args(["--port", &port.to_string()])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("zk-mock says where it listens");
    // "zk-mock listening on 127.0.0.1:PORT (seed N)"
    let port = line
        .split_whitespace()
        .nth(3)
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line from zk-mock: {line:?}"));
    (child, port)
}

impl<I> Container<'_, I> {
    /// The port the test's port (2181) is served on.
    pub fn get_host_port(&self, internal: u16) -> u16 {
        if internal != 2181 {
            unsupported(&format!("container port {internal}"));
        }
        self.port
    }

    /// Stops the server: every client loses its connection, and sessions
    /// expire on the clients' side as with a stopped ZooKeeper. (An
    /// ensemble's server is killed; the others carry on.)
    pub fn stop(&self) {
        if let Some((e, i)) = &self.member {
            return e.server_verb(*i, "kill");
        }
        if let Some(mut c) = self.child.lock().unwrap().take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port (with an empty tree: unlike a
    /// container, the mock keeps no data directory).
    pub fn start(&self) {
        if let Some((e, i)) = &self.member {
            return e.server_verb(*i, "restart");
        }
        let mut child = self.child.lock().unwrap();
        if child.is_none() {
            *child = Some(spawn(&self.args, self.port).0);
        }
    }

    pub fn stdout(&self) -> LogStream {
        LogStream {
            log: self.member.as_ref().map(|(e, i)| (e.log.clone(), *i)),
        }
    }
}

impl<I> Drop for Container<'_, I> {
    fn drop(&mut self) {
        if self.member.is_none() {
            self.stop();
        }
    }
}

/// What one ensemble "container" asks for.
struct EnsembleSpec {
    /// The directory of its zoo.cfg: the Cluster's own, shared by its
    /// members, so the ensemble's identity.
    key: std::path::PathBuf,
    /// zk-mock flags from the JVM flags.
    flags: Vec<String>,
}

/// One member's zoo.cfg: its `server.N` lines by id, and zk-mock flags.
struct MemberCfg {
    myid: usize,
    lines: std::collections::BTreeMap<usize, String>,
    flags: Vec<String>,
}

/// `server.N=host:quorum:election[:role];host:clientPort` lines and the
/// other settings of an ensemble member's zoo.cfg.
fn member_cfg(myid: usize, cfg: &str) -> MemberCfg {
    let mut lines = std::collections::BTreeMap::new();
    let mut flags = Vec::new();
    for line in cfg.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (k, v) = line.split_once('=').unwrap_or((line, ""));
        match k {
            _ if k.starts_with("server.") => {
                let id = k["server.".len()..]
                    .parse()
                    .unwrap_or_else(|_| unsupported(&format!("server line {line:?}")));
                lines.insert(id, line.to_string());
            }
            "initLimit" | "syncLimit" | "dataDir" => {}
            "localSessionsEnabled" if v == "true" => flags.push("--local-sessions".into()),
            "reconfigEnabled" if v == "true" => flags.push("--reconfig-enabled".into()),
            // A one-participant quorum stays a quorum (not a standalone
            // server): what zk-mock's ensembles are anyway.
            "standaloneEnabled" if v == "false" => {}
            _ => unsupported(&format!("ensemble zoo.cfg line {line:?}")),
        }
    }
    MemberCfg { myid, lines, flags }
}

/// The client port a server line names.
fn client_port(line: &str) -> u16 {
    line.rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| unsupported(&format!("server line {line:?}")))
}

/// Starts (or joins) the ensemble of `spec`; returns it, server `myid`'s
/// index and the first client port. The first member to come waits a
/// moment — the Cluster writes every member's zoo.cfg before it waits for
/// any — then reads them all (`zoo{id}.cfg` beside its own): the ensemble
/// has as many servers as the highest id any of them names, and starts
/// with the membership of the participant with the highest id (the one
/// that leads), so an observer that only its own zoo.cfg names is one.
fn join_ensemble(spec: &EnsembleSpec, myid: usize) -> (Arc<Ensemble>, usize, u16) {
    let mut all = ENSEMBLES.lock().unwrap();
    all.retain(|(_, _, e)| e.strong_count() > 0);
    if let Some((e, first)) = all
        .iter()
        .find(|(k, _, _)| *k == spec.key)
        .and_then(|(_, first, e)| Some((e.upgrade()?, *first)))
    {
        return (e, myid - 1, first);
    }
    std::thread::sleep(Duration::from_millis(300));
    let mut members = Vec::new();
    for entry in std::fs::read_dir(&spec.key).expect("the cluster's directory") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let Some(id) = name
            .strip_prefix("zoo")
            .and_then(|n| n.strip_suffix(".cfg"))
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        members.push(member_cfg(id, &std::fs::read_to_string(&path).expect("zoo.cfg")));
    }
    members.sort_by_key(|m| m.myid);
    let union: std::collections::BTreeMap<usize, &String> =
        members.iter().flat_map(|m| m.lines.iter().map(|(id, l)| (*id, l))).collect();
    let servers = *union.keys().last().expect("server lines");
    if union.keys().copied().ne(1..=servers) {
        unsupported("an ensemble whose ids are not 1..N");
    }
    let first_port = client_port(union[&1]);
    for (id, line) in &union {
        if usize::from(client_port(line)) != usize::from(first_port) + id - 1 {
            unsupported("an ensemble whose client ports are not consecutive");
        }
    }
    let participant = |m: &&MemberCfg| {
        m.lines
            .get(&m.myid)
            .is_some_and(|l| !l.split(';').next().unwrap_or_default().ends_with(":observer"))
    };
    let leader = members
        .iter()
        .rev()
        .find(participant)
        .unwrap_or_else(|| unsupported("an ensemble without a participant"));
    let mut args = vec![
        "--port".to_string(),
        first_port.to_string(),
        "--servers".into(),
        servers.to_string(),
        "--admin-port".into(),
        "0".into(),
    ];
    for line in leader.lines.values() {
        args.extend(["--membership".to_string(), line.clone()]);
    }
    let mut flags: Vec<String> = members.iter().flat_map(|m| m.flags.iter().cloned()).collect();
    flags.sort();
    flags.dedup();
    flags.extend(spec.flags.iter().cloned());
    let bin = std::env::var("ZK_MOCK_BIN").expect("ZK_MOCK_BIN: the zk-mock binary to run");
    let mut child = Command::new(&bin)
        .args(&args)
        .args(&flags)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {bin}: {e}"));
    let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
    const ADMIN: &str = "zk-mock admin interface on http://";
    let admin = out
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix(ADMIN).and_then(|a| a.split_whitespace().next()?.parse().ok()))
        .expect("zk-mock announces its admin interface");
    std::thread::spawn(move || out.for_each(drop));
    let log = Arc::new(Log::default());
    let err = child.stderr.take().expect("stderr");
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            sink.lines.lock().unwrap().push(line);
            sink.grew.notify_all();
        }
    });
    let e = Arc::new(Ensemble {
        child: Mutex::new(child),
        admin,
        log,
    });
    all.push((spec.key.clone(), first_port, Arc::downgrade(&e)));
    (e, myid - 1, first_port)
}

/// The ensemble member a zoo.cfg with `server.N` lines describes, if it
/// has them, and its myid.
fn ensemble_spec(image: &RunnableImage<GenericImage>) -> Option<(EnsembleSpec, usize)> {
    let path = image
        .volumes
        .iter()
        .find(|(_, d)| d == "/conf/zoo.cfg")
        .map(|(s, _)| std::path::PathBuf::from(s))?;
    let cfg = std::fs::read_to_string(&path).expect("zoo.cfg");
    if !cfg.lines().any(|l| l.trim().starts_with("server.")) {
        return None;
    }
    if image.network.as_deref() != Some("host") {
        unsupported("an ensemble off the host network");
    }
    let mut flags = Vec::new();
    for (key, value) in &image.image.env {
        if key != "SERVER_JVMFLAGS" {
            continue;
        }
        for flag in value.split_whitespace() {
            match flag {
                "-Dreadonlymode.enabled=true" => flags.push("--readonly-mode".into()),
                _ if flag.starts_with("-Dzookeeper.DigestAuthenticationProvider.superDigest=") => {
                    flags.extend(["--super-digest".into(), flag.split_once('=').unwrap().1.to_string()])
                }
                "-Dzookeeper.enableEagerACLCheck=true" => {}
                _ => unsupported(&format!("ensemble JVM flag {flag}")),
            }
        }
    }
    let myid = image
        .volumes
        .iter()
        .find(|(_, d)| d == "/data")
        .and_then(|(s, _)| std::fs::read_to_string(format!("{s}/myid")).ok())
        .and_then(|m| m.trim().parse().ok())
        .unwrap_or_else(|| unsupported("an ensemble server without a myid"));
    let key = path.parent().expect("zoo.cfg's directory").to_path_buf();
    Some((EnsembleSpec { key, flags }, myid))
}

/// Translates the test's image into zk-mock flags.
fn mock_args(image: &RunnableImage<GenericImage>) -> Vec<String> {
    let mut args = Vec::new();
    if image.image.name != "zookeeper" {
        unsupported(&format!("image {}", image.image.name));
    }
    let old = image.image.tag.starts_with("3.3") || image.image.tag.starts_with("3.4");
    args.extend(["--compat".to_string(), if old { "3.8" } else { "3.9" }.to_string()]);
    if let Some(n) = &image.network {
        unsupported(&format!("network {n}"));
    }
    for (key, value) in &image.image.env {
        match key.as_str() {
            "SERVER_JVMFLAGS" => {
                for flag in value.split_whitespace() {
                    let (k, v) = flag
                        .strip_prefix("-D")
                        .and_then(|f| f.split_once('='))
                        .unwrap_or_else(|| unsupported(&format!("JVM flag {flag}")));
                    match k {
                        "zookeeper.DigestAuthenticationProvider.superDigest" => {
                            args.extend(["--super-digest".into(), v.to_string()])
                        }
                        "zookeeper.extendedTypesEnabled" if v == "true" => {
                            args.push("--extended-types".into())
                        }
                        "znode.container.checkIntervalMs" => {
                            args.extend(["--container-check-interval".into(), v.to_string()])
                        }
                        // Checks ACLs before existence (ZOOKEEPER-3882) on
                        // the server it is set on; nothing the tests rely on.
                        "zookeeper.enableEagerACLCheck" => {}
                        _ => unsupported(&format!("JVM flag {flag}")),
                    }
                }
            }
            // The client's side of the health check.
            "CLIENT_JVMFLAGS" if value.is_empty() => {}
            _ => unsupported(&format!("environment {key}={value}")),
        }
    }
    for (source, dest) in &image.volumes {
        if dest != "/conf/zoo.cfg" {
            unsupported(&format!("volume {dest}"));
        }
        let cfg = std::fs::read_to_string(source).expect("zoo.cfg");
        for line in cfg.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let (k, v) = line.split_once('=').unwrap_or((line, ""));
            match k {
                "clientPort" if v == "2181" => {}
                "initLimit" | "syncLimit" | "dataDir" => {}
                "reconfigEnabled" if v == "true" => args.push("--reconfig-enabled".into()),
                _ => unsupported(&format!("zoo.cfg line {line:?}")),
            }
        }
    }
    args
}

pub mod clients {
    use super::*;

    /// The Docker client: here, a starter of zk-mock processes.
    #[derive(Debug, Default)]
    pub struct Cli;

    impl Cli {
        pub fn run(&self, image: RunnableImage<GenericImage>) -> Container<'_, GenericImage> {
            if let Some((spec, myid)) = ensemble_spec(&image) {
                let (ensemble, index, first_port) = join_ensemble(&spec, myid);
                return Container {
                    args: Vec::new(),
                    port: first_port + index as u16,
                    child: Mutex::new(None),
                    member: Some((ensemble, index)),
                    _image: PhantomData,
                };
            }
            let args = mock_args(&image);
            let (child, port) = spawn(&args, 0);
            Container {
                args,
                port,
                child: Mutex::new(Some(child)),
                member: None,
                _image: PhantomData,
            }
        }
    }
}

pub mod core {
    pub use super::{Container, Healthcheck, LogStream, RunnableImage, WaitFor};
}

pub mod images {
    pub mod generic {
        pub use crate::GenericImage;
    }
}
