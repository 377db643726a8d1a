//! The real-ZooKeeper target: a TCP proxy per client between the clients and
//! the server (faults), session takeover (expiry), and an observer session
//! (history). Work in progress: every fault answers "unsupported" for now.

use std::net::SocketAddr;

use crate::target::History;

#[derive(Debug)]
pub(crate) struct RealTarget {
    server: SocketAddr,
}

impl RealTarget {
    pub(crate) fn new(server: SocketAddr) -> RealTarget {
        RealTarget { server }
    }
    pub(crate) fn server_connect_string(&self) -> String {
        self.server.to_string()
    }
    pub(crate) async fn connect_string(&self, _client: &str) -> Result<String, String> {
        Ok(self.server.to_string())
    }
    pub(crate) async fn expire(&self, _client: &str) -> bool {
        false
    }
    pub(crate) fn disconnect(&self, _client: &str) -> bool {
        false
    }
    pub(crate) fn stall(&self, _client: &str) -> bool {
        false
    }
    pub(crate) fn resume(&self, _client: &str) -> bool {
        false
    }
    pub(crate) fn request_fault(
        &self,
        _op: &str,
        _dir: &str,
        _client: Option<&str>,
        _times: u64,
        _apply: bool,
    ) -> Result<(), String> {
        Err("request faults on a real target are not supported yet".into())
    }
    pub(crate) fn faults_fired(&self) -> u64 {
        0
    }
    pub(crate) fn refuse(&self, _on: bool) {}
    pub(crate) fn history(&self, _prefixes: &[String]) -> History {
        History::default()
    }
}
