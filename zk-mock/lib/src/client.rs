//! [`RawClient`]: a minimal ZooKeeper client that speaks the wire protocol
//! with this crate's own records and hides nothing: every reply header, every
//! notification and every closed socket is visible. For wire-level tests (of
//! the mock or of a real ZooKeeper) and benchmarks; applications want a real
//! client such as `zookeeper-client`.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::codec::{frame, split_frame, DecodeError, Record};
use crate::proto::{
    ConnectRequest, ConnectResponse, OpCode, ReplyHeader, RequestHeader, WatcherEvent,
    XID_NOTIFICATION,
};

/// A reply: its header and the undecoded body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The reply header (xid, zxid, err).
    pub header: ReplyHeader,
    /// The bytes after the header (empty for header-only replies).
    pub body: Bytes,
}

impl Reply {
    /// Decodes the body as `R`.
    ///
    /// # Errors
    /// If the body does not hold an `R`.
    pub fn decode<R: Record>(&self) -> Result<R, DecodeError> {
        R::decode(&self.body)
    }
}

/// A watch notification and the zxid its header carried (−1 on 3.8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    /// `ReplyHeader.zxid` of the notification.
    pub zxid: i64,
    /// The event.
    pub event: WatcherEvent,
}

/// A raw protocol client over one TCP connection.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// use zk_mock::client::RawClient;
/// use zk_mock::proto::{OpCode, PathWatchRequest, GetDataResponse};
///
/// let zk = zk_mock::ZkMock::start().await;
/// let mut c = RawClient::connect(zk.addr(), 10_000).await?;
/// let r = c.request(OpCode::GetData, &PathWatchRequest { path: "/".into(), watch: false }).await?;
/// assert_eq!(r.header.err, 0);
/// let data: GetDataResponse = r.decode().unwrap();
/// assert_eq!(data.stat.num_children, 1);
/// # Ok(())
/// # }
/// ```
pub struct RawClient {
    stream: Box<dyn Stream>,
    buf: BytesMut,
    next_xid: i32,
    /// The session this connection serves, as the wire carries it (an
    /// `i64`: `SessionId::from` it to name the session to the mock).
    pub session_id: i64,
    /// The session password.
    pub passwd: Bytes,
    /// The negotiated timeout.
    pub timeout: i32,
    /// The highest non-negative zxid seen in a reply header.
    pub last_zxid: i64,
    events: VecDeque<Notification>,
    read_timeout: Duration,
}

/// A byte stream a [`RawClient`] can speak over: a TCP socket, or a TLS
/// session on one (for the secure port).
pub trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin> Stream for T {}

impl std::fmt::Debug for RawClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawClient")
            .field("session_id", &format_args!("{:#x}", self.session_id))
            .field("timeout", &self.timeout)
            .field("last_zxid", &self.last_zxid)
            .field("next_xid", &self.next_xid)
            .finish_non_exhaustive()
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::UnexpectedEof, "server closed the connection")
}

impl RawClient {
    /// Opens a new session with the requested timeout (and the readOnly byte, as every modern client sends).
    ///
    /// # Errors
    /// I/O errors, or the server closing the connection instead of answering.
    pub async fn connect(addr: SocketAddr, timeout_ms: i32) -> io::Result<RawClient> {
        let req = ConnectRequest {
            time_out: timeout_ms,
            passwd: Some(Bytes::from_static(&[0; 16])),
            read_only: Some(false),
            ..Default::default()
        };
        let (c, resp) = RawClient::handshake(addr, &req).await?;
        resp.ok_or_else(closed)?;
        Ok(c)
    }

    /// Sends `req` as the first packet and returns the client with the server's
    /// answer, or `None` if the server closed the connection without one.
    ///
    /// # Errors
    /// I/O errors other than the server closing the connection.
    pub async fn handshake(
        addr: SocketAddr,
        req: &ConnectRequest,
    ) -> io::Result<(RawClient, Option<ConnectResponse>)> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        RawClient::handshake_over(stream, req).await
    }

    /// [`handshake`](Self::handshake) over a stream the caller opened, e.g.
    /// a TLS session with the secure port.
    ///
    /// # Errors
    /// I/O errors other than the server closing the connection.
    pub async fn handshake_over(
        stream: impl Stream + 'static,
        req: &ConnectRequest,
    ) -> io::Result<(RawClient, Option<ConnectResponse>)> {
        let mut c = RawClient {
            stream: Box::new(stream),
            buf: BytesMut::with_capacity(4096),
            next_xid: 1,
            session_id: 0,
            passwd: Bytes::new(),
            timeout: 0,
            last_zxid: req.last_zxid_seen,
            events: VecDeque::new(),
            read_timeout: Duration::from_secs(10),
        };
        c.send_frame(&req.to_bytes()).await?;
        let Some(f) = c.read_frame().await? else {
            return Ok((c, None));
        };
        let resp = ConnectResponse::decode(&f)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        c.session_id = resp.session_id;
        c.passwd = resp.passwd.clone().unwrap_or_default();
        c.timeout = resp.time_out;
        Ok((c, Some(resp)))
    }

    /// How long a read waits before failing with `TimedOut` (default 10 s).
    pub fn set_read_timeout(&mut self, d: Duration) {
        self.read_timeout = d;
    }

    /// Writes `body` with a length prefix.
    ///
    /// # Errors
    /// I/O errors.
    pub async fn send_frame(&mut self, body: &[u8]) -> io::Result<()> {
        self.stream.write_all(&frame(body)).await?;
        self.stream.flush().await
    }

    /// Writes bytes exactly as given (no length prefix).
    ///
    /// # Errors
    /// I/O errors.
    pub async fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await?;
        self.stream.flush().await
    }

    /// Reads the next whole frame; `None` when the server closed the connection.
    ///
    /// # Errors
    /// I/O errors, and `TimedOut` after the read timeout.
    pub async fn read_frame(&mut self) -> io::Result<Option<Bytes>> {
        loop {
            if let Some(f) = split_frame(&mut self.buf, usize::MAX >> 1)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?
            {
                return Ok(Some(f));
            }
            let n = tokio::time::timeout(self.read_timeout, self.stream.read_buf(&mut self.buf))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "no reply from server"))?;
            match n {
                Ok(0) => return Ok(None),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    /// Reads until the server closes the connection, returning whatever text it sent
    /// (for four-letter words).
    ///
    /// # Errors
    /// I/O errors.
    pub async fn read_to_end(&mut self) -> io::Result<Vec<u8>> {
        let mut out = self.buf.split().to_vec();
        tokio::time::timeout(self.read_timeout, self.stream.read_to_end(&mut out))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "server did not close"))??;
        Ok(out)
    }

    /// Sends a request with the next xid and waits for its reply, queueing any
    /// notifications that arrive first (see [`take_events`](Self::take_events)).
    ///
    /// # Errors
    /// I/O errors, `UnexpectedEof` if the server closes first, `InvalidData`
    /// if a reply arrives out of order.
    pub async fn request<R: Record>(&mut self, op: OpCode, body: &R) -> io::Result<Reply> {
        self.request_raw(op as i32, &body.to_bytes()).await
    }

    /// [`request`](Self::request) with a raw op code and body.
    ///
    /// # Errors
    /// As for [`request`](Self::request).
    pub async fn request_raw(&mut self, op: i32, body: &[u8]) -> io::Result<Reply> {
        let xid = if op == OpCode::Ping as i32 {
            -2
        } else {
            let x = self.next_xid;
            self.next_xid += 1;
            x
        };
        self.request_with_xid(xid, op, body).await
    }

    /// Sends a request with the given xid and waits for the reply carrying it
    /// (a ping's reply always carries −2).
    ///
    /// # Errors
    /// As for [`request`](Self::request).
    pub async fn request_with_xid(&mut self, xid: i32, op: i32, body: &[u8]) -> io::Result<Reply> {
        let mut b = BytesMut::with_capacity(8 + body.len());
        RequestHeader { xid, op_type: op }.encode(&mut b);
        b.extend_from_slice(body);
        self.send_frame(&b).await?;
        let reply = self.next_reply().await?.ok_or_else(closed)?;
        let want = if op == OpCode::Ping as i32 { -2 } else { xid };
        if reply.header.xid != want {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("reply xid {} for request xid {}", reply.header.xid, xid),
            ));
        }
        Ok(reply)
    }

    /// Reads the next reply that is not a notification (notifications are
    /// queued); `None` if the server closed the connection.
    ///
    /// # Errors
    /// I/O errors and undecodable frames.
    pub async fn next_reply(&mut self) -> io::Result<Option<Reply>> {
        loop {
            let Some(f) = self.read_frame().await? else {
                return Ok(None);
            };
            let (body, header) = ReplyHeader::parse(&f)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "short reply header"))?;
            if header.xid == XID_NOTIFICATION {
                let event = WatcherEvent::decode(body)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                self.events.push_back(Notification {
                    zxid: header.zxid,
                    event,
                });
                continue;
            }
            if header.zxid > self.last_zxid {
                self.last_zxid = header.zxid;
            }
            return Ok(Some(Reply {
                header,
                body: Bytes::copy_from_slice(body),
            }));
        }
    }

    /// Waits up to `within` for the server to send anything; returns the
    /// notifications received so far (without consuming replies).
    ///
    /// # Errors
    /// I/O errors.
    pub async fn wait_events(&mut self, within: Duration) -> io::Result<Vec<Notification>> {
        let saved = self.read_timeout;
        self.read_timeout = within;
        let r = self.next_reply().await;
        self.read_timeout = saved;
        match r {
            Ok(Some(reply)) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unexpected reply {:?}", reply.header),
                ));
            }
            Ok(None) => {}
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
            Err(e) => return Err(e),
        }
        Ok(self.take_events())
    }

    /// Waits for the next notification (the oldest queued one first); `None`
    /// if the server closed the connection. A reply arriving meanwhile is an
    /// error: this is for connections with nothing outstanding.
    ///
    /// # Errors
    /// I/O errors, `TimedOut` after the read timeout, `InvalidData` for a
    /// reply or an undecodable frame.
    pub async fn next_event(&mut self) -> io::Result<Option<Notification>> {
        if let Some(n) = self.events.pop_front() {
            return Ok(Some(n));
        }
        let Some(f) = self.read_frame().await? else {
            return Ok(None);
        };
        let (body, header) = ReplyHeader::parse(&f)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "short reply header"))?;
        if header.xid != XID_NOTIFICATION {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unexpected reply {header:?}"),
            ));
        }
        let event = WatcherEvent::decode(body)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        Ok(Some(Notification {
            zxid: header.zxid,
            event,
        }))
    }

    /// Takes the notifications received so far, in arrival order.
    pub fn take_events(&mut self) -> Vec<Notification> {
        self.events.drain(..).collect()
    }

    /// Sends closeSession and waits for its reply and the server closing the socket.
    ///
    /// # Errors
    /// I/O errors.
    pub async fn close(mut self) -> io::Result<Reply> {
        let r = self.request_raw(OpCode::CloseSession as i32, &[]).await?;
        let _ = self.read_frame().await;
        Ok(r)
    }
}
