//! The part of the `testcontainers` API that `zookeeper-client`'s
//! tests/zookeeper.rs uses, backed by `zk-mock` processes instead of Docker.
//!
//! `Cli::run` reads what the test put in its "image": the tag (`3.3` and
//! `3.4` ask for an old server: `--compat 3.8`, notifications without
//! zxids; anything else is 3.9: `--compat 3.9`), the JVM flags in
//! `SERVER_JVMFLAGS` (super digest, extended types, container check
//! interval) and a mounted zoo.cfg. Anything zk-mock cannot be — an
//! ensemble, SASL enforcement, TLS, host networking — panics with
//! "zk-mock cannot run this test", so such a test fails loudly instead of
//! passing against the wrong server.

use std::io::{BufRead, BufReader};
use std::marker::PhantomData;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

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

/// The server's log (only ensemble tests read it).
#[derive(Debug)]
pub struct LogStream;

impl LogStream {
    pub fn wait_for_message(&self, message: &str) -> Result<(), String> {
        unsupported(&format!("waiting for the log message {message:?}"))
    }
}

/// A running `zk-mock`; killed on drop.
#[derive(Debug)]
pub struct Container<'a, I> {
    args: Vec<String>,
    port: u16,
    child: Mutex<Option<Child>>,
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
    /// expire on the clients' side as with a stopped ZooKeeper.
    pub fn stop(&self) {
        if let Some(mut c) = self.child.lock().unwrap().take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port (with an empty tree: unlike a
    /// container, the mock keeps no data directory).
    pub fn start(&self) {
        let mut child = self.child.lock().unwrap();
        if child.is_none() {
            *child = Some(spawn(&self.args, self.port).0);
        }
    }

    pub fn stdout(&self) -> LogStream {
        LogStream
    }
}

impl<I> Drop for Container<'_, I> {
    fn drop(&mut self) {
        self.stop();
    }
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
            let args = mock_args(&image);
            let (child, port) = spawn(&args, 0);
            Container {
                args,
                port,
                child: Mutex::new(Some(child)),
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
