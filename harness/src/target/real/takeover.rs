//! Session expiry on a real server by taking the session over
//! (what Java and Curator tests do: a second connection re-attaches the
//! session with its id and password and closes it), and per-client source
//! addresses.

use std::net::SocketAddr;

use bytes::Bytes;
use tokio::net::TcpStream;
use zk_mock::client::RawClient;
use zk_mock::proto::ConnectRequest;

/// How many clients' connections share one source address: ZooKeeper
/// refuses more than `maxClientCnxns` (60 by default) connections from one
/// address, and a client may briefly have two (the old one closing).
pub(super) const CLIENTS_PER_SOURCE: usize = 20;

/// The source address of the `index`th proxy's connections to a server on
/// the loopback: 127.0.0.1 for the first clients, then other loopback
/// addresses (all of 127/8 is local on Linux), so a scenario with
/// a thousand clients does not need `maxClientCnxns=0` on the server.
pub(super) fn source_for(server: SocketAddr, index: usize) -> Option<std::net::IpAddr> {
    let SocketAddr::V4(v4) = server else {
        return None;
    };
    if !v4.ip().is_loopback() {
        return None;
    }
    let group = index / CLIENTS_PER_SOURCE;
    if group == 0 {
        return None;
    }
    let [hi, lo] = (group as u16).to_be_bytes();
    Some(std::net::Ipv4Addr::new(127, 1, hi, lo.max(1)).into())
}

/// Connects to `server`, from `source` if it can bind there.
pub(super) async fn connect_from(
    source: Option<std::net::IpAddr>,
    server: SocketAddr,
) -> std::io::Result<TcpStream> {
    if let Some(ip) = source {
        let bound = tokio::net::TcpSocket::new_v4()
            .and_then(|s| s.bind(SocketAddr::new(ip, 0)).map(|()| s));
        if let Ok(sock) = bound {
            if let Ok(s) = sock.connect(server).await {
                return Ok(s);
            }
        }
    }
    TcpStream::connect(server).await
}

/// Re-attaches `session` on a connection of our own and closes it there.
/// `Ok(false)` if the server no longer knows the session.
pub(super) async fn takeover(
    server: SocketAddr,
    session: i64,
    passwd: Bytes,
) -> std::io::Result<bool> {
    let req = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        time_out: 10_000,
        session_id: session,
        passwd: Some(passwd),
        read_only: Some(false),
    };
    let (raw, resp) = RawClient::handshake(server, &req).await?;
    match resp {
        Some(r) if r.time_out > 0 && r.session_id == session => {}
        _ => return Ok(false),
    }
    let reply = raw.close().await?;
    Ok(reply.header.err == 0)
}
