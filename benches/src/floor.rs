//! The floor: a stateless server on the same sockets, for the same client,
//! that does the least any ZooKeeper server must do. It frames each
//! request, decodes its header (and the path, which a create's reply
//! echoes), and answers with a well-formed reply of the usual size: a
//! 100-byte getData, a Stat, ten child names, copied from bodies encoded
//! once. It keeps no tree, no sessions, no watches, and writes every reply
//! a read produced in one write. What zk-mock costs above it is what the tree, the
//! sessions, the watches, the recorder and the fault rules cost.
//!
//! It runs as zk-mock does, on a thread of its own with a current-thread
//! Tokio runtime (`zk-floor-PORT`), so its CPU time is measured the same way.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use zk_mock::codec::Record;
use zk_mock::proto::{
    ConnectRequest, ConnectResponse, GetChildren2Response, GetChildrenResponse, GetDataResponse,
    OpCode, Stat, StatResponse,
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

/// The reply bodies, encoded once: a server's work per reply is at least
/// copying its bytes out.
struct Bodies {
    /// getData: 100 bytes of data and a Stat.
    data: Bytes,
    /// exists, setData: a Stat.
    stat: Bytes,
    /// getChildren: ten names.
    children: Bytes,
    /// getChildren2: ten names and a Stat.
    children2: Bytes,
    /// create2's Stat, after its path.
    stat_after_path: Bytes,
}

impl Bodies {
    fn new() -> Bodies {
        let encode = |r: &dyn Fn(&mut BytesMut)| {
            let mut b = BytesMut::new();
            r(&mut b);
            b.freeze()
        };
        let names: Vec<String> = (0..10).map(|i| format!("child-{i}")).collect();
        Bodies {
            data: encode(&|b| {
                GetDataResponse {
                    data: Some(Bytes::from(vec![7u8; 100])),
                    stat: stat(0x100),
                }
                .encode(b)
            }),
            stat: encode(&|b| StatResponse { stat: stat(0x100) }.encode(b)),
            children: encode(&|b| {
                GetChildrenResponse {
                    children: names.clone(),
                }
                .encode(b)
            }),
            children2: encode(&|b| {
                GetChildren2Response {
                    children: names.clone(),
                    stat: stat(0x100),
                }
                .encode(b)
            }),
            stat_after_path: encode(&|b| stat(0x100).encode(b)),
        }
    }
}

async fn serve(mut stream: TcpStream, session: i64, zxid: Arc<AtomicI64>) {
    let bodies = Bodies::new();
    let mut input = BytesMut::with_capacity(64 * 1024);
    let mut out = BytesMut::with_capacity(64 * 1024);
    let mut connected = false;
    loop {
        // Every whole frame read so far is answered before the next read,
        // and all of the answers go out in one write.
        while input.len() >= 4 {
            let len = (&input[..4]).get_i32() as usize;
            if input.len() < 4 + len {
                break;
            }
            input.advance(4);
            let frame = input.split_to(len);
            if !connected {
                let Ok(req) = ConnectRequest::decode(&frame) else {
                    return;
                };
                let at = out.len();
                out.put_i32(0);
                ConnectResponse {
                    protocol_version: 0,
                    time_out: req.time_out,
                    session_id: session,
                    passwd: Some(Bytes::from_static(&[0; 16])),
                    read_only: req.read_only.map(|_| false),
                }
                .encode(&mut out);
                let n = (out.len() - at - 4) as i32;
                out[at..at + 4].copy_from_slice(&n.to_be_bytes());
                connected = true;
                continue;
            }
            // The request header: xid, op code; the path, if any, follows.
            if frame.len() < 8 {
                return;
            }
            let xid = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
            let op = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
            let path = || -> &[u8] {
                let Some(len) = frame.get(8..12) else {
                    return &[];
                };
                let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]).max(0) as usize;
                frame.get(12..12 + len).unwrap_or(&[])
            };
            const CREATE: i32 = OpCode::Create as i32;
            const CREATE2: i32 = OpCode::Create2 as i32;
            const DELETE: i32 = OpCode::Delete as i32;
            const SET_DATA: i32 = OpCode::SetData as i32;
            const EXISTS: i32 = OpCode::Exists as i32;
            const GET_DATA: i32 = OpCode::GetData as i32;
            const GET_CHILDREN: i32 = OpCode::GetChildren as i32;
            const GET_CHILDREN2: i32 = OpCode::GetChildren2 as i32;
            const PING: i32 = OpCode::Ping as i32;
            const CLOSE: i32 = OpCode::CloseSession as i32;
            let z = if matches!(op, CREATE | CREATE2 | SET_DATA | DELETE) {
                zxid.fetch_add(1, Ordering::Relaxed) + 1
            } else {
                zxid.load(Ordering::Relaxed)
            };
            let body_len = match op {
                CREATE => 4 + path().len(),
                CREATE2 => 4 + path().len() + bodies.stat_after_path.len(),
                GET_DATA => bodies.data.len(),
                SET_DATA | EXISTS => bodies.stat.len(),
                GET_CHILDREN => bodies.children.len(),
                GET_CHILDREN2 => bodies.children2.len(),
                _ => 0,
            };
            out.reserve(4 + 16 + body_len);
            out.put_i32((16 + body_len) as i32);
            out.put_i32(if op == PING { -2 } else { xid });
            out.put_i64(z);
            out.put_i32(0);
            match op {
                CREATE | CREATE2 => {
                    let p = path();
                    out.put_i32(p.len() as i32);
                    out.extend_from_slice(p);
                    if op == CREATE2 {
                        out.extend_from_slice(&bodies.stat_after_path);
                    }
                }
                GET_DATA => out.extend_from_slice(&bodies.data),
                SET_DATA | EXISTS => out.extend_from_slice(&bodies.stat),
                GET_CHILDREN => out.extend_from_slice(&bodies.children),
                GET_CHILDREN2 => out.extend_from_slice(&bodies.children2),
                _ => {}
            }
            if op == CLOSE {
                let _ = stream.write_all(&out).await;
                return;
            }
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
