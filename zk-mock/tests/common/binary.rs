//! The `zk-mock` binary as a child process, shared by the `binary` and
//! `clients` test crates (included with `#[path]`).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

/// A running `zk-mock` binary, killed on drop.
pub(crate) struct Binary {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
    /// Every server's address, comma-separated (`--servers N`).
    #[allow(dead_code)]
    pub(crate) connect_string: String,
    /// The admin interface's address and announcement, with `--admin-port`.
    #[allow(dead_code)]
    pub(crate) admin: Option<(SocketAddr, String)>,
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary on a free port with `args`; returns once its first
/// line ("zk-mock listening on ADDR (seed N)") says where it serves.
pub(crate) fn spawn(args: &[&str]) -> Binary {
    spawn_with(args, None)
}

/// [`spawn`] with `ZK_MOCK_ADMIN_TOKEN` set to `admin_token` (and cleared
/// without one). With `--admin-port` in `args`, it also waits for the admin
/// interface's announcement ("zk-mock admin interface on http://ADDR …").
/// The rest of the binary's output is read and dropped, so it never writes
/// into a closed pipe.
pub(crate) fn spawn_with(args: &[&str], admin_token: Option<&str>) -> Binary {
    const ADMIN: &str = "zk-mock admin interface on http://";
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_zk-mock"));
    cmd.args(["--port", "0"])
        .args(args)
        .env_remove("ZK_MOCK_ADMIN_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(t) = admin_token {
        cmd.env("ZK_MOCK_ADMIN_TOKEN", t);
    }
    let mut child = cmd.spawn().expect("zk-mock binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok);
    let line = lines.next().unwrap_or_default();
    let connect_string = line
        .split_whitespace()
        .nth(3)
        .unwrap_or_default()
        .to_string();
    let addr = connect_string
        .split(',')
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let admin = args.contains(&"--admin-port").then(|| {
        let line = lines
            .by_ref()
            .find(|l| l.starts_with(ADMIN))
            .expect("the admin interface is announced");
        let addr = line[ADMIN.len()..]
            .split_whitespace()
            .next()
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("unexpected line {line:?}"));
        (addr, line)
    });
    std::thread::spawn(move || lines.for_each(drop));
    Binary {
        child,
        addr,
        connect_string,
        admin,
    }
}
