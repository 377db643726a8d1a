//! The `zk-mock` binary as a child process, shared by the `it` and
//! `clients` test crates (included with `#[path]`).

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

/// A running `zk-mock` binary, killed on drop.
pub(crate) struct Binary {
    pub(crate) child: Child,
    pub(crate) addr: SocketAddr,
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_zk-mock"))
        .args(["--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("zk-mock binary starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split_whitespace()
        .nth(3)
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    Binary { child, addr }
}
