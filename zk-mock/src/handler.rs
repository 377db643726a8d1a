//! One task pair per connection: the reader decodes frames and applies them
//! under the state lock; the writer drains the connection's outbox to the
//! socket. Replies and notifications are queued in one outbox, so a
//! connection's order is the order the state produced them in.

use std::net::SocketAddr;

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tracing::Instrument;

use crate::codec::{split_frame, Record};
use crate::four_letter;
use crate::proto::{ConnectRequest, RequestHeader};
use crate::session::ConnId;
use crate::state::{lock, Flow, Outgoing, Shared};

/// Serves one accepted socket until either side closes it or the server stops.
pub(crate) async fn serve(
    shared: Shared,
    socket: TcpStream,
    peer: SocketAddr,
    shutdown: watch::Receiver<bool>,
) {
    let _ = socket.set_nodelay(true);
    let (rd, wr) = socket.into_split();
    let (tx, rx) = mpsc::unbounded_channel();
    let (conn, max_packet) = {
        let mut st = lock(&shared);
        (st.register(tx, peer), st.settings.max_packet)
    };
    let span = tracing::debug_span!("conn", id = conn, %peer);
    read_loop(shared, conn, rd, wr, rx, max_packet, shutdown)
        .instrument(span)
        .await
}

async fn read_loop(
    shared: Shared,
    conn: ConnId,
    mut rd: OwnedReadHalf,
    wr: OwnedWriteHalf,
    rx: mpsc::UnboundedReceiver<Outgoing>,
    max_packet: usize,
    mut shutdown: watch::Receiver<bool>,
) {
    tracing::debug!("accepted");
    let mut writer = tokio::spawn(write_loop(wr, rx));
    let mut writer_done = false;
    let mut buf = BytesMut::with_capacity(4096);
    let mut handshaken = false;
    loop {
        // Handle every whole frame already buffered before reading more.
        match next_frame(&shared, conn, &mut buf, &mut handshaken, max_packet) {
            Step::Frame => continue,
            Step::Close => break,
            Step::NeedMore => {}
        }
        tokio::select! {
            r = rd.read_buf(&mut buf) => match r {
                Ok(0) => { tracing::debug!("peer closed"); break }
                Ok(_) => {}
                Err(e) => { tracing::debug!(%e, "read error"); break }
            },
            _ = &mut writer => { writer_done = true; break }
            _ = shutdown.changed() => break,
        }
    }
    lock(&shared).disconnected(conn);
    if !writer_done {
        let _ = writer.await;
    }
    tracing::debug!("closed");
}

enum Step {
    Frame,
    NeedMore,
    Close,
}

fn next_frame(
    shared: &Shared,
    conn: ConnId,
    buf: &mut BytesMut,
    handshaken: &mut bool,
    max_packet: usize,
) -> Step {
    if !*handshaken && four_letter::is_command(buf) {
        let word = buf.split_to(4);
        let mut st = lock(shared);
        let text = four_letter::answer(&st, &word);
        if let Some(c) = st.conns.get(&conn) {
            let _ = c.tx.send(Outgoing::Frame(Bytes::from(text)));
        }
        st.close_conn(conn);
        return Step::Close;
    }
    let frame = match split_frame(buf, max_packet) {
        Ok(Some(f)) => f,
        Ok(None) => return Step::NeedMore,
        Err(e) => {
            // NIOServerCnxn.readLength: "Len error", connection closed, no reply.
            tracing::info!(%e, "bad length prefix; closing connection");
            lock(shared).close_conn(conn);
            return Step::Close;
        }
    };
    if !*handshaken {
        let req = match ConnectRequest::decode(&frame) {
            Ok(r) => r,
            Err(e) => {
                tracing::info!(%e, "malformed ConnectRequest; closing connection");
                lock(shared).close_conn(conn);
                return Step::Close;
            }
        };
        *handshaken = true;
        return match lock(shared).connect(conn, &req) {
            Flow::Continue => Step::Frame,
            Flow::Close => Step::Close,
        };
    }
    let header = match RequestHeader::parse(&frame) {
        Ok((body, h)) => (h, body),
        Err(_) => {
            tracing::info!(
                len = frame.len(),
                "frame too short for a request header; closing connection"
            );
            lock(shared).close_conn(conn);
            return Step::Close;
        }
    };
    let (h, body) = header;
    let (flow, applied) = lock(shared).process(conn, h.xid, h.op_type, body);
    tracing::trace!(xid = h.xid, op = h.op_type, ?applied, "request");
    match flow {
        Flow::Continue => Step::Frame,
        Flow::Close => Step::Close,
    }
}

/// Writes queued frames, batching whatever is already queued into one write.
async fn write_loop(mut wr: OwnedWriteHalf, mut rx: mpsc::UnboundedReceiver<Outgoing>) {
    let mut out = BytesMut::new();
    let mut closing = false;
    while let Some(msg) = rx.recv().await {
        let mut next = Some(msg);
        while let Some(m) = next.take() {
            match m {
                Outgoing::Frame(b) => out.extend_from_slice(&b),
                Outgoing::Close => {
                    closing = true;
                    break;
                }
            }
            next = rx.try_recv().ok();
        }
        if !out.is_empty() && wr.write_all(&out).await.is_err() {
            return;
        }
        out.clear();
        if closing {
            break;
        }
    }
    let _ = wr.shutdown().await;
}
