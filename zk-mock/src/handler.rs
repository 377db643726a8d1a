//! One task pair per connection: the reader decodes frames and applies them
//! under the state lock; the writer drains the connection's outbox to the
//! socket. Replies and notifications are queued in one outbox, so a
//! connection's order is the order the state produced them in. A stall
//! (the connection's [`Gate`]) stops both directions.

use std::net::SocketAddr;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use crate::codec::{split_frame, Record};
use crate::four_letter;
use crate::proto::{ConnectRequest, RequestHeader};
use crate::session::ConnId;
use crate::state::{lock, Flow, Gate, Outgoing, Shared};

/// Serves one accepted socket until either side closes it or the server stops.
pub(crate) async fn serve(
    shared: Shared,
    socket: TcpStream,
    peer: SocketAddr,
    server: usize,
    shutdown: watch::Receiver<bool>,
) {
    let _ = socket.set_nodelay(true);
    let (rd, wr) = socket.into_split();
    serve_io(shared, rd, wr, peer, server, shutdown).await
}

/// Serves one connection over any byte stream (a TCP socket's halves, or a
/// TLS session's: see `tls`).
pub(crate) async fn serve_io<R, W>(
    shared: Shared,
    rd: R,
    wr: W,
    peer: SocketAddr,
    server: usize,
    shutdown: watch::Receiver<bool>,
) where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let (conn, gate, queued, max_packet) = {
        let mut st = lock(&shared);
        let (conn, gate, queued) = st.register(tx, peer, server);
        (conn, gate, queued, st.settings.max_packet)
    };
    let span = tracing::debug_span!("conn", id = conn, %peer);
    let reader = Reader {
        shared,
        conn,
        gate,
        max_packet,
        buf: BytesMut::with_capacity(READ_BUFFER),
        handshaken: false,
    };
    reader
        .run(rd, wr, rx, queued, shutdown)
        .instrument(span)
        .await
}

/// What a connection's read buffer starts at (and returns to once a larger
/// frame has been handled). Requests are small: this holds several, and an
/// idle connection holds no more. `split_frame` reserves room for a larger
/// frame once its length prefix is in.
const READ_BUFFER: usize = 1024;

pub(crate) struct Reader {
    shared: Shared,
    conn: ConnId,
    gate: watch::Receiver<Gate>,
    max_packet: usize,
    buf: BytesMut,
    handshaken: bool,
}

enum Step {
    Frame,
    NeedMore,
    Close,
}

impl Reader {
    async fn run<R, W>(
        mut self,
        mut rd: R,
        wr: W,
        rx: mpsc::UnboundedReceiver<Outgoing>,
        queued: Arc<AtomicUsize>,
        mut shutdown: watch::Receiver<bool>,
    ) where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        tracing::debug!("accepted");
        let mut writer = tokio::spawn(write_loop(wr, rx, self.gate.clone(), queued));
        let mut writer_done = false;
        'serve: loop {
            // A stalled connection reads nothing: not even buffered frames are applied.
            while *self.gate.borrow() != Gate::Open {
                if *self.gate.borrow() == Gate::Closed {
                    break 'serve;
                }
                tokio::select! {
                    r = self.gate.changed() => if r.is_err() { break 'serve },
                    _ = &mut writer => { writer_done = true; break 'serve }
                    _ = shutdown.changed() => break 'serve,
                }
            }
            // Handle every whole frame already buffered before reading more.
            match self.next_frame() {
                Step::Frame => continue,
                Step::Close => break,
                Step::NeedMore => {}
            }
            // A buffer grown for a large frame is not kept once it is handled.
            if self.buf.is_empty() && self.buf.capacity() > 4 * READ_BUFFER {
                self.buf = BytesMut::with_capacity(READ_BUFFER);
            }
            tokio::select! {
                r = rd.read_buf(&mut self.buf) => match r {
                    Ok(0) => { tracing::debug!("peer closed"); break }
                    Ok(_) => {}
                    Err(e) => { tracing::debug!(%e, "read error"); break }
                },
                _ = self.gate.changed() => {}
                _ = &mut writer => { writer_done = true; break }
                _ = shutdown.changed() => break,
            }
        }
        lock(&self.shared).disconnected(self.conn);
        if !writer_done {
            let _ = writer.await;
        }
        tracing::debug!("closed");
    }

    fn next_frame(&mut self) -> Step {
        let conn = self.conn;
        if !self.handshaken && four_letter::is_command(&self.buf) {
            let word = self.buf.split_to(4);
            let mut st = lock(&self.shared);
            if let Some(c) = st.out.conns.get_mut(&conn) {
                c.four_letter = true;
                c.received += 1;
            }
            let server = st.server_of(conn);
            let text = four_letter::answer(&st, server, &word);
            st.enqueue(conn, Bytes::from(text));
            st.close_conn(conn);
            return Step::Close;
        }
        if !self.handshaken {
            return self.handshake();
        }
        let frame = match split_frame(&mut self.buf, self.max_packet) {
            Ok(Some(f)) => f,
            Ok(None) => return Step::NeedMore,
            Err(e) => return self.bad_length(e),
        };
        let Ok((body, h)) = RequestHeader::parse(&frame) else {
            tracing::info!(
                len = frame.len(),
                "frame too short for a request header; closing connection"
            );
            lock(&self.shared).close_conn(conn);
            return Step::Close;
        };
        // Decoded before the lock is taken: the server's other connections
        // do not wait for this one's parsing.
        let req = crate::proto::decode_request(h.op_type, body);
        let flow = lock(&self.shared).process(conn, h.xid, h.op_type, req);
        tracing::trace!(xid = h.xid, op = h.op_type, "request");
        match flow {
            Flow::Continue => Step::Frame,
            Flow::Close => Step::Close,
        }
    }

    /// Appends bytes as if read from the socket and handles every whole
    /// frame (the fuzzing harness's way in). False once the connection is
    /// closed.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> bool {
        self.buf.extend_from_slice(bytes);
        loop {
            match *self.gate.borrow() {
                Gate::Open => {}
                Gate::Closed => return false,
                Gate::Stalled => return true,
            }
            match self.next_frame() {
                Step::Frame => continue,
                Step::NeedMore => return true,
                Step::Close => return false,
            }
        }
    }

    /// A reader for a connection registered without a socket (fuzzing).
    pub(crate) fn detached(shared: Shared, conn: ConnId, gate: watch::Receiver<Gate>) -> Reader {
        let max_packet = lock(&shared).settings.max_packet;
        Reader {
            shared,
            conn,
            gate,
            max_packet,
            buf: BytesMut::new(),
            handshaken: false,
        }
    }

    fn bad_length(&mut self, e: crate::codec::FrameError) -> Step {
        // NIOServerCnxn.readLength: "Len error", connection closed, no reply.
        tracing::info!(%e, "bad length prefix; closing connection");
        lock(&self.shared).close_conn(self.conn);
        Step::Close
    }

    /// The first frame: a ConnectRequest. For a stalled session it waits
    /// (the frame stays buffered) until the session is resumed or expires.
    fn handshake(&mut self) -> Step {
        let conn = self.conn;
        let len = match split_frame(&mut self.buf.clone(), self.max_packet) {
            Ok(Some(f)) => f.len(),
            Ok(None) => return Step::NeedMore,
            Err(e) => return self.bad_length(e),
        };
        let req = match ConnectRequest::decode(&self.buf[4..4 + len]) {
            Ok(r) => r,
            Err(e) => {
                tracing::info!(%e, "malformed ConnectRequest; closing connection");
                lock(&self.shared).close_conn(conn);
                return Step::Close;
            }
        };
        let mut st = lock(&self.shared);
        let server = st.server_of(conn);
        if !st.serves(server) {
            // No ZooKeeperServer behind the factory (an election, no
            // quorum, a partition): NIOServerCnxn closes the connection
            // ("ZooKeeperServer not running") without an answer.
            tracing::debug!(server, "not serving; closing a handshake");
            st.close_conn(conn);
            return Step::Close;
        }
        if st.hold_if_stalled(conn, req.session_id) {
            tracing::debug!(
                session = format_args!("{:#x}", req.session_id),
                "session stalled; holding its reconnect"
            );
            return Step::Frame;
        }
        let _ = self.buf.split_to(4 + len);
        self.handshaken = true;
        match st.connect(conn, &req) {
            Flow::Continue => Step::Frame,
            Flow::Close => Step::Close,
        }
    }
}

/// Resolves once the gate says the connection is closed. A connection
/// closed the ordinary way drops its gate without saying so: its writer
/// then goes on flushing what is queued, so this never resolves.
async fn closed(gate: &mut watch::Receiver<Gate>) {
    loop {
        if *gate.borrow_and_update() == Gate::Closed {
            return;
        }
        if gate.changed().await.is_err() {
            return std::future::pending().await;
        }
    }
}

/// Writes queued frames, batching whatever is already queued into one write.
/// While the gate is stalled nothing is written; if the connection is closed
/// while stalled, what was held is dropped.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut wr: W,
    mut rx: mpsc::UnboundedReceiver<Outgoing>,
    mut gate: watch::Receiver<Gate>,
    queued: Arc<AtomicUsize>,
) {
    let mut out = BytesMut::new();
    let mut closing = false;
    while let Some(msg) = rx.recv().await {
        let mut next = Some(msg);
        let mut pause = None;
        while let Some(m) = next.take() {
            match m {
                Outgoing::Frame(b) => out.extend_from_slice(&b),
                Outgoing::Pause(d) => {
                    pause = Some(d);
                    break;
                }
                Outgoing::Close => {
                    closing = true;
                    break;
                }
            }
            next = rx.try_recv().ok();
        }
        loop {
            let g = *gate.borrow_and_update();
            match g {
                Gate::Open => break,
                Gate::Closed => return,
                Gate::Stalled => {
                    if gate.changed().await.is_err() {
                        return;
                    }
                }
            }
        }
        if !out.is_empty() {
            // (flush: a TLS session buffers; for TCP it does nothing.) A
            // reader that stops reading blocks the write; closing its
            // connection (a slow reader, or a stalled one cut off) ends it.
            let write = async {
                wr.write_all(&out).await?;
                wr.flush().await
            };
            tokio::select! {
                r = write => if r.is_err() { return },
                _ = closed(&mut gate) => return,
            }
            queued.fetch_sub(out.len(), Ordering::Relaxed);
        }
        out.clear();
        if closing {
            break;
        }
        if let Some(d) = pause {
            tokio::time::sleep(d).await;
        }
    }
    let _ = wr.shutdown().await;
}
