//! The floor: a stateless server on the same sockets, for the same client,
//! that does the least any ZooKeeper server must do. It frames each
//! request, decodes its header (and the path, which a create's reply
//! echoes), and answers with a well-formed reply of the usual size: a
//! 100-byte getData, a Stat, ten child names. It keeps no tree, no
//! sessions, no watches. What zk-mock costs above it is what the tree, the
//! sessions, the watches, the recorder and the fault rules cost.
//!
//! It runs as zk-mock does, on a thread of its own with a current-thread
//! Tokio runtime (`zk-floor-PORT`), so its CPU time is measured the same way.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use bytes::{Buf, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zk_mock::codec::{jute, Record};
use zk_mock::proto::{
    ConnectRequest, ConnectResponse, Create2Response, CreateResponse, GetChildren2Response,
    GetChildrenResponse, GetDataResponse, OpCode, ReplyHeader, RequestHeader, Stat, StatResponse,
};

/// The floor server; dropping it stops it.
#[derive(Debug)]
pub struct Floor {
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Floor {
    /// Starts it on a free loopback port.
    pub fn start() -> std::io::Result<Floor> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("zk-floor-{}", addr.port()))
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the floor's runtime");
                rt.block_on(async move {
                    let listener = TcpListener::from_std(listener).expect("the floor's listener");
                    let zxid = Arc::new(AtomicI64::new(0x100));
                    tokio::select! {
                        _ = rx => {}
                        () = accept(listener, zxid) => {}
                    }
                });
            })?;
        Ok(Floor {
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Floor {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn accept(listener: TcpListener, zxid: Arc<AtomicI64>) {
    let mut next_session = 0x1_0000_0000_i64;
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        next_session += 1;
        tokio::spawn(serve(stream, next_session, zxid.clone()));
    }
}

/// A node's Stat as a 100-byte node with ten children would have it.
fn stat(zxid: i64) -> Stat {
    Stat {
        czxid: 0x10,
        mzxid: zxid,
        ctime: 1,
        mtime: 1,
        version: 1,
        cversion: 10,
        aversion: 0,
        ephemeral_owner: 0,
        data_length: 100,
        num_children: 10,
        pzxid: 0x10,
    }
}

async fn serve(mut stream: TcpStream, session: i64, zxid: Arc<AtomicI64>) {
    let mut input = BytesMut::with_capacity(64 * 1024);
    let mut out = BytesMut::with_capacity(64 * 1024);
    let data = Bytes::from(vec![7u8; 100]);
    let children: Vec<String> = (0..10).map(|i| format!("child-{i}")).collect();
    let mut connected = false;
    loop {
        // Every whole frame read so far is answered before the next read.
        while input.len() >= 4 {
            let len = (&input[..4]).get_i32() as usize;
            if input.len() < 4 + len {
                break;
            }
            input.advance(4);
            let frame = input.split_to(len);
            let at = out.len();
            out.extend_from_slice(&[0; 4]);
            if !connected {
                let Ok(req) = ConnectRequest::decode(&frame) else {
                    return;
                };
                ConnectResponse {
                    protocol_version: 0,
                    time_out: req.time_out,
                    session_id: session,
                    passwd: Some(Bytes::from_static(&[0; 16])),
                    read_only: req.read_only.map(|_| false),
                }
                .encode(&mut out);
                connected = true;
            } else {
                let Ok((body, h)) = RequestHeader::parse(&frame) else {
                    return;
                };
                let op = OpCode::from_i32(h.op_type);
                let write = matches!(
                    op,
                    Some(OpCode::Create | OpCode::Create2 | OpCode::SetData | OpCode::Delete)
                );
                let z = if write {
                    zxid.fetch_add(1, Ordering::Relaxed) + 1
                } else {
                    zxid.load(Ordering::Relaxed)
                };
                let xid = if op == Some(OpCode::Ping) { -2 } else { h.xid };
                ReplyHeader {
                    xid,
                    zxid: z,
                    err: 0,
                }
                .encode(&mut out);
                let path = || jute::ustring(body).map(|(_, p)| p).unwrap_or_default();
                match op {
                    Some(OpCode::Create) => CreateResponse { path: path() }.encode(&mut out),
                    Some(OpCode::Create2) => Create2Response {
                        path: path(),
                        stat: stat(z),
                    }
                    .encode(&mut out),
                    Some(OpCode::GetData) => GetDataResponse {
                        data: Some(data.clone()),
                        stat: stat(z),
                    }
                    .encode(&mut out),
                    Some(OpCode::SetData | OpCode::Exists) => {
                        StatResponse { stat: stat(z) }.encode(&mut out)
                    }
                    Some(OpCode::GetChildren) => GetChildrenResponse {
                        children: children.clone(),
                    }
                    .encode(&mut out),
                    Some(OpCode::GetChildren2) => GetChildren2Response {
                        children: children.clone(),
                        stat: stat(z),
                    }
                    .encode(&mut out),
                    // delete, closeSession, ping and the rest: the header alone.
                    _ => {}
                }
                if op == Some(OpCode::CloseSession) {
                    let len = (out.len() - at - 4) as i32;
                    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
                    let _ = stream.write_all(&out).await;
                    return;
                }
            }
            let len = (out.len() - at - 4) as i32;
            out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        if !out.is_empty() {
            if stream.write_all(&out).await.is_err() {
                return;
            }
            out.clear();
        }
        match stream.read_buf(&mut input).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}
