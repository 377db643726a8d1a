//! One task per connection. It reads frames and applies them under the
//! state lock, then takes what the state queued in the connection's
//! outbox (its own replies, and other connections' notifications) and
//! writes it, all without handing anything to another task: a request's
//! reply goes out from the task that read the request, as ZooKeeper's
//! NIO worker answers from the thread that read it. Replies and
//! notifications are queued in one outbox, so a connection's order is the
//! order the state produced them in: other connections' notifications come
//! through the connection's channel, and what the state queues for it while
//! its own task applies a request comes straight back to that task, after
//! what the channel held (no wake-up of the task that is running, and no
//! channel round trip for a reply). A stall (the connection's [`Gate`])
//! stops both directions.
//!
//! The loop waits on whichever of these can move: the socket readable
//! (while the gate is open), the socket writable (while there is output
//! and no `delay` fault's pause is running), the outbox, the gate and the
//! server's shutdown. A client that stops reading does not stop the
//! server reading its requests: its output piles up in the outbox until
//! the slow-reader limit closes the connection.

use std::collections::VecDeque;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use atomic_waker::AtomicWaker;
use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::Instrument;

use crate::codec::{split_frame, Record};
use crate::core::{lock, Flow, Gate, Outgoing, Shared};
use crate::proto::{ConnectRequest, RequestHeader};
use crate::session::ConnId;

/// Serves one accepted socket until either side closes it or the server stops.
pub(crate) async fn serve(
    shared: Shared,
    mut socket: TcpStream,
    peer: SocketAddr,
    server: usize,
    shutdown: watch::Receiver<bool>,
) {
    let _ = socket.set_nodelay(true);
    let (rd, wr) = socket.split();
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
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let (conn, gate, queued, max_packet) = {
        let mut st = lock(&shared);
        let (conn, gate, queued) = st.register(tx, peer, server);
        (conn, gate, queued, st.settings().max_packet)
    };
    let span = tracing::debug_span!("conn", id = conn, %peer);
    let reader = Reader {
        shared,
        conn,
        gate,
        max_packet,
        buf: BytesMut::with_capacity(READ_BUFFER),
        handshaken: false,
        held: None,
        waited: false,
        commit: None,
    };
    let connection = Connection {
        reader,
        inbox: Inbox {
            rx,
            ready: BytesMut::new(),
            taken: VecDeque::new(),
        },
        queued,
        wakes: Wakes::new(),
        out: BytesMut::new(),
        unflushed: false,
        pause: None,
        paused_until: None,
        hold: None,
        close_queued: false,
    };
    connection.run(rd, wr, shutdown).instrument(span).await
}

/// What a connection's read buffer starts at (and returns to once a larger
/// frame has been handled). Requests are small: this holds several, and an
/// idle connection holds no more. `split_frame` reserves room for a larger
/// frame once its length prefix is in.
const READ_BUFFER: usize = 1024;

/// What the state queued for a connection: its channel, and what was taken
/// from it or handed over directly (the task's own replies, see
/// `State::serve`) and is still to be written, in order: `ready`, then
/// `taken`.
struct Inbox {
    /// Polled by a wait only once a send has woken it (see [`Wakes`]).
    rx: mpsc::UnboundedReceiver<Outgoing>,
    /// Frames' bytes handed over directly, to be written before anything
    /// in `taken` (usually all there is: a task's replies to its own
    /// requests).
    ready: BytesMut,
    taken: VecDeque<Outgoing>,
}

/// A connection's output side, and the loop that serves it.
struct Connection {
    reader: Reader,
    inbox: Inbox,
    /// Bytes queued for this connection and not yet written (the state
    /// counts what it adds, this loop what it writes: the slow-reader limit).
    queued: Arc<crate::outbox::Queued>,
    /// The one registration of this task for its inbox, gate and shutdown.
    wakes: Wakes,
    /// Taken from the outbox, to be written now.
    out: BytesMut,
    /// Written, but the stream (a TLS session) has not flushed it yet.
    unflushed: bool,
    /// A `delay` fault's pause, taken from the outbox: it starts once what
    /// came before it is written. Nothing more is taken meanwhile.
    pause: Option<std::time::Duration>,
    /// The running pause: nothing is written or taken until then.
    paused_until: Option<Instant>,
    /// A `hold_reply` fault's gate, taken from the outbox: what came
    /// before it is written, then nothing more is taken until it opens.
    hold: Option<Opened>,
    /// The state closed the connection: what came before is written, then
    /// the stream is shut down.
    close_queued: bool,
}

impl Connection {
    async fn run<R, W>(mut self, mut rd: R, mut wr: W, shutdown: watch::Receiver<bool>)
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        tracing::debug!("accepted");
        // Whether requests are still read (not after EOF, an error, a
        // close, or the server's shutdown).
        let mut reading = true;
        // Changes of the gate (none once the state drops its sender with
        // the connection: its last value stands) and the server's
        // shutdown. Each is one future kept across the loop's turns, made
        // again only when it fires.
        let mut gate_changed = Some(changed(self.reader.gate.clone()));
        let mut stop = Some(changed(shutdown));
        let mut stopping = false;
        // The gate as last read. It is read again only when it changed: a
        // version check is a plain load, where reading the value takes the
        // channel's lock (two locked instructions a turn, two more a frame).
        let mut gate = *self.reader.gate.borrow_and_update();
        loop {
            if self.reader.gate.has_changed().unwrap_or(true) {
                gate = *self.reader.gate.borrow_and_update();
            }
            if gate == Gate::Closed {
                // Cut off (a slow reader, or a stalled connection closed):
                // what was held is dropped.
                break;
            }
            let open = gate == Gate::Open;
            // Every buffered frame was handled this turn and the gate is
            // still open after the last (nothing held, nothing closed).
            let mut drained = false;
            if open && reading && !self.close_queued {
                // Every whole frame already buffered, before reading more;
                // a frame that stalls the connection stops the rest.
                while self.reader.held.is_none() {
                    match self.reader.next_frame(Some(&mut self.inbox)) {
                        Step::Frame
                            if !self.reader.gate.has_changed().unwrap_or(true)
                                && self.reader.held.is_none() =>
                        {
                            continue
                        }
                        Step::NeedMore => {
                            drained = true;
                            break;
                        }
                        Step::Frame => break,
                        Step::Close => {
                            reading = false;
                            break;
                        }
                    }
                }
                // A buffer grown for a large frame is not kept once it is handled.
                let buf = &mut self.reader.buf;
                if buf.is_empty() && buf.capacity() > 4 * READ_BUFFER {
                    *buf = BytesMut::with_capacity(READ_BUFFER);
                }
            }
            if !reading && !stopping {
                // No more requests: the state lets the connection go, and
                // what it queued before is still written.
                stopping = true;
                lock(&self.reader.shared).disconnected(self.reader.conn);
            }
            self.take_queued();
            if let Some(until) = self.paused_until {
                if Instant::now() >= until {
                    self.paused_until = None;
                    self.take_queued();
                }
            }
            if self.out.is_empty() && !self.unflushed {
                if let Some(d) = self.pause.take() {
                    self.paused_until = Some(Instant::now() + d);
                } else if self.close_queued {
                    let _ = wr.shutdown().await;
                    break;
                }
            }
            let mut write = open && !self.out.is_empty() && self.paused_until.is_none();
            if write {
                // What the requests just read produced goes out now, as the
                // floor's loop writes it, without a turn of the wait below
                // (which would poll every other branch first). A socket that
                // cannot take it now is waited on below.
                let out = &self.out;
                let r = poll_fn(|cx| Poll::Ready(Pin::new(&mut wr).poll_write(cx, out))).await;
                match r {
                    Poll::Ready(Ok(0) | Err(_)) => break,
                    Poll::Ready(Ok(n)) => {
                        if !self.wrote(&mut wr, n).await {
                            break;
                        }
                        if !drained
                            || !self.out.is_empty()
                            || self.pause.is_some()
                            || self.close_queued
                        {
                            // More to handle or to write, or a pause or a
                            // close to start now that what came before is out.
                            continue;
                        }
                        // Everything is out and nothing waits on it: every
                        // whole frame was handled above with the gate open
                        // and the outbox was taken, so the turn goes straight
                        // to the wait (whose branches see whatever arrives
                        // meanwhile) instead of looking at all of that again.
                        write = false;
                    }
                    Poll::Pending => {}
                }
            }
            let flush = open && self.out.is_empty() && self.unflushed;
            let take = self.taking();
            let read = open && reading && !self.close_queued && self.reader.held.is_none();
            let held = open && reading && self.reader.held.is_some();
            if read {
                // Room for whatever the client has sent since. A read that
                // fills the spare room exactly leaves tokio unsure whether
                // more is waiting, which costs another read (a syscall)
                // to find out; a shorter read tells it the socket is drained.
                let buf = &mut self.reader.buf;
                if buf.capacity() - buf.len() < READ_BUFFER / 2 {
                    buf.reserve(READ_BUFFER);
                }
            }
            // In this order (not tokio's random one): what is likely ready on
            // a busy connection first, so a turn that finds it polls nothing
            // else; the gate, the timers and the shutdown are polled on every
            // turn that waits (each is woken by its own event), and tokio's
            // cooperative budget bounds how long a flooding client keeps
            // them waiting.
            tokio::select! {
                biased;
                r = push(&mut wr, &self.out), if write || flush => match r {
                    Err(_) => break,
                    Ok(0) if write => break,
                    Ok(0) => self.unflushed = false,
                    Ok(n) => {
                        if !self.wrote(&mut wr, n).await {
                            break;
                        }
                    }
                },
                r = rd.read_buf(&mut self.reader.buf), if read => match r {
                    Ok(0) => { tracing::debug!("peer closed"); reading = false }
                    Ok(_) => {}
                    Err(e) => { tracing::debug!(%e, "read error"); reading = false }
                },
                // Polled before the three below, and never ready: takes
                // which of them were woken since the last wait.
                () = refresh(&self.wakes) => {}
                m = recv(&self.wakes, &mut self.inbox), if take => match m {
                    Some(m) => self.take(m),
                    None => self.close_queued = true,
                },
                (alive, rx) = fired(&self.wakes, Source::Gate, &mut gate_changed), if gate_changed.is_some() => {
                    gate_changed = alive.then(|| changed(rx));
                }
                () = sleep_until(self.paused_until), if self.paused_until.is_some() => {}
                () = opened(&mut self.hold), if self.hold.is_some() => self.hold = None,
                () = opened(&mut self.reader.commit), if open && self.reader.commit.is_some() => {
                    self.reader.commit = None;
                    if self.reader.release(Some(&mut self.inbox), |st, c| st.release_commits(c)) == Step::Close {
                        reading = false;
                    }
                }
                () = opened(&mut self.reader.held), if held => {
                    self.reader.held = None;
                    if self.reader.release(Some(&mut self.inbox), |st, c| st.release_request(c)) == Step::Close {
                        reading = false;
                    }
                }
                _ = fired(&self.wakes, Source::Stop, &mut stop), if stop.is_some() => {
                    stop = None;
                    reading = false;
                }
            }
        }
        if !stopping {
            lock(&self.reader.shared).disconnected(self.reader.conn);
        }
        tracing::debug!("closed");
    }

    /// Whether the outbox is taken from now (not during a pause or after a close).
    fn taking(&self) -> bool {
        !self.close_queued
            && self.pause.is_none()
            && self.paused_until.is_none()
            && self.hold.is_none()
    }

    /// Takes whatever the outbox holds, without waiting.
    fn take_queued(&mut self) {
        while self.taking() {
            let ready = &mut self.inbox.ready;
            if !ready.is_empty() {
                if self.out.is_empty() {
                    std::mem::swap(&mut self.out, ready);
                } else {
                    self.out.extend_from_slice(ready);
                    ready.clear();
                    crate::codec::let_go_if_large(ready);
                }
                continue;
            }
            if let Some(m) = self.inbox.taken.pop_front() {
                self.take(m);
                continue;
            }
            // An empty channel (the usual case: a connection's own replies
            // come through `taken`) is seen with one atomic load; a message
            // sent meanwhile wakes the wait's `recv`.
            if self.inbox.rx.is_empty() {
                break;
            }
            match self.inbox.rx.try_recv() {
                Ok(m) => self.take(m),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => self.close_queued = true,
            }
        }
    }

    fn take(&mut self, m: Outgoing) {
        match m {
            Outgoing::Frame(b) => self.out.extend_from_slice(&b),
            Outgoing::Pause(d) => self.pause = Some(d),
            Outgoing::Hold(open) => self.hold = Some(wait_open(open)),
            Outgoing::Close => self.close_queued = true,
        }
    }

    /// `n` bytes went out. Once everything has, the stream is to be flushed.
    fn written(&mut self, n: usize) {
        self.out.advance(n);
        self.queued.written(n);
        if self.out.is_empty() {
            self.unflushed = true;
            crate::codec::let_go_if_large(&mut self.out);
        }
    }

    /// `n` bytes were written: counts them and, once everything is out,
    /// flushes what it can without waiting. False if the stream failed.
    async fn wrote<W: AsyncWrite + Unpin>(&mut self, wr: &mut W, n: usize) -> bool {
        self.written(n);
        !self.unflushed || self.flush_now(wr).await
    }

    /// Flushes the stream if it can be done without waiting (a TLS session
    /// buffers; for TCP this does nothing); a flush that cannot finish now
    /// is finished by the loop. False if the stream failed.
    async fn flush_now<W: AsyncWrite + Unpin>(&mut self, wr: &mut W) -> bool {
        let r = poll_fn(|cx| match Pin::new(&mut *wr).poll_flush(cx) {
            Poll::Ready(r) => Poll::Ready(Some(r)),
            Poll::Pending => Poll::Ready(None),
        })
        .await;
        match r {
            Some(Ok(())) => self.unflushed = false,
            Some(Err(_)) => return false,
            None => {}
        }
        true
    }
}

/// The next message on the inbox's channel, once a send woke it.
async fn recv(wakes: &Wakes, inbox: &mut Inbox) -> Option<Outgoing> {
    let rx = &mut inbox.rx;
    poll_fn(|_| wakes.poll(Source::Inbox, |cx| rx.poll_recv(cx))).await
}

/// Never ready: registers the task with its [`Wakes`] and takes the bits
/// its sources set since, for the branches polled after it.
async fn refresh(wakes: &Wakes) {
    poll_fn(|cx| {
        wakes.refresh(cx);
        Poll::Pending
    })
    .await
}

/// Writes what it can of `out`, or flushes the stream when `out` is empty
/// (then `Ok(0)`).
async fn push<W: AsyncWrite + Unpin>(wr: &mut W, out: &[u8]) -> std::io::Result<usize> {
    if out.is_empty() {
        wr.flush().await.map(|()| 0)
    } else {
        wr.write(out).await
    }
}

/// A change on a watch channel: resolves with whether the sender is still
/// there, and the receiver, to wait for the next one. Polled only once its
/// channel has woken it (see [`Wakes`]).
type Changed<T> = Pin<Box<dyn Future<Output = (bool, watch::Receiver<T>)> + Send>>;

fn changed<T: Send + Sync + 'static>(mut rx: watch::Receiver<T>) -> Changed<T> {
    Box::pin(async move {
        let alive = rx.changed().await.is_ok();
        (alive, rx)
    })
}

/// What a connection's wait watches besides its socket, its timers and the
/// gates of held requests: each is woken far less often than the socket.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// The inbox's channel (other connections' notifications).
    Inbox,
    /// A change of the connection's gate.
    Gate,
    /// The server's shutdown.
    Stop,
}

impl Source {
    const ALL: u8 = 0b111;

    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// The [`Source`]s' shared wake-up: one registration of the task (an
/// `AtomicWaker`) and one word with a bit for each, set by that source's
/// own waker. A wait registers and takes the bits once ([`Wakes::refresh`]:
/// three locked instructions, where a flag and a registration for each
/// source cost nine), then polls only the sources whose bit is set. A
/// source's wake sets its bit before it wakes the task, and the task
/// registers before it takes the bits, so no wake-up is lost.
struct Wakes {
    shared: Arc<WakeBits>,
    /// Each source's waker, by its [`Source`] number.
    wakers: [Waker; 3],
    /// The bits taken and not yet cleared by a poll that found nothing
    /// (only this task reads or writes it: plain loads and stores).
    pending: AtomicU8,
}

struct WakeBits {
    bits: AtomicU8,
    task: AtomicWaker,
}

/// One source's waker: sets the source's bit, then wakes the task.
struct SourceWaker {
    shared: Arc<WakeBits>,
    bit: u8,
}

impl Wake for SourceWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.shared.bits.fetch_or(self.bit, Ordering::Release);
        self.shared.task.wake();
    }
}

impl Wakes {
    fn new() -> Wakes {
        // Every bit set to begin with: the first wait polls each source
        // (which registers its waker there).
        let shared = Arc::new(WakeBits {
            bits: AtomicU8::new(Source::ALL),
            task: AtomicWaker::new(),
        });
        let waker = |s: Source| {
            Waker::from(Arc::new(SourceWaker {
                shared: shared.clone(),
                bit: s.bit(),
            }))
        };
        Wakes {
            wakers: [
                waker(Source::Inbox),
                waker(Source::Gate),
                waker(Source::Stop),
            ],
            shared,
            pending: AtomicU8::new(0),
        }
    }

    /// Registers `cx`'s task, then takes the bits set since the last call.
    fn refresh(&self, cx: &mut Context<'_>) {
        self.shared.task.register(cx.waker());
        let fired = self.shared.bits.swap(0, Ordering::AcqRel);
        if fired != 0 {
            let p = self.pending.load(Ordering::Relaxed);
            self.pending.store(p | fired, Ordering::Relaxed);
        }
    }

    /// Polls `poll` with `source`'s waker if its bit is set. `Pending`
    /// clears the bit (the source's waker sets it again); `Ready` leaves it,
    /// as what is polled may have more.
    fn poll<T>(&self, source: Source, poll: impl FnOnce(&mut Context<'_>) -> Poll<T>) -> Poll<T> {
        let p = self.pending.load(Ordering::Relaxed);
        if p & source.bit() == 0 {
            return Poll::Pending;
        }
        let r = poll(&mut Context::from_waker(&self.wakers[source as usize]));
        if r.is_pending() {
            self.pending.store(p & !source.bit(), Ordering::Relaxed);
        }
        r
    }
}

/// Waits for a kept [`Changed`] future (never, if there is none), polled
/// once `source` has woken.
async fn fired<T>(
    wakes: &Wakes,
    source: Source,
    f: &mut Option<Changed<T>>,
) -> (bool, watch::Receiver<T>) {
    match f {
        Some(f) => poll_fn(|_| wakes.poll(source, |cx| f.as_mut().poll(cx))).await,
        None => std::future::pending().await,
    }
}

/// A gate's opening (or its sender's end, which counts as open).
type Opened = Pin<Box<dyn Future<Output = ()> + Send>>;

fn wait_open(mut open: watch::Receiver<bool>) -> Opened {
    Box::pin(async move {
        let _ = open.wait_for(|o| *o).await;
    })
}

/// Runs `f`, a connection's task applying its own requests, and takes what
/// the state queued for the connection meanwhile straight into its inbox,
/// after what its channel held (which was queued before).
fn serve_own(
    st: &mut crate::core::State,
    conn: ConnId,
    inbox: &mut Inbox,
    f: impl FnOnce(&mut crate::core::State) -> Flow,
) -> Flow {
    let flow = st.serve(conn, f);
    if st.has_direct() {
        // Under the lock no message can be on its way (every send is made
        // under it): an empty channel is seen without taking from it.
        while !inbox.rx.is_empty() {
            let Ok(m) = inbox.rx.try_recv() else { break };
            inbox.taken.push_back(m);
        }
        st.take_direct(&mut inbox.ready, &mut inbox.taken);
    }
    flow
}

/// The sync the first of `conn`'s waiting requests waits for, as a future.
fn commit_wait(st: &crate::core::State, conn: ConnId) -> Option<Opened> {
    st.commit_wait(conn).map(|s| Box::pin(s.wait()) as Opened)
}

/// Whether a kept [`Opened`] future has resolved, polled once with no
/// runtime and no waker; taken if so.
fn opened_now(f: &mut Option<Opened>) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    let done = f
        .as_mut()
        .is_some_and(|f| f.as_mut().poll(&mut cx).is_ready());
    if done {
        *f = None;
    }
    done
}

/// Waits for a kept [`Opened`] future (never, if there is none).
async fn opened(f: &mut Option<Opened>) {
    match f {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}

/// Sleeps until `until` (never, if there is none).
async fn sleep_until(until: Option<Instant>) {
    match until {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

pub(crate) struct Reader {
    shared: Shared,
    conn: ConnId,
    gate: watch::Receiver<Gate>,
    max_packet: usize,
    buf: BytesMut,
    handshaken: bool,
    /// A request held unapplied (a `hold_request` fault, a handshake not
    /// yet answered, not yet synced or within the connect latency): nothing
    /// more is read until it is released.
    held: Option<Opened>,
    /// The buffered handshake waited already (for its createSession's
    /// sync, and the connect latency).
    waited: bool,
    /// The sync the first of the requests waiting for one waits for
    /// (`commit.rs`); reading goes on meanwhile.
    commit: Option<Opened>,
}

#[derive(PartialEq, Eq)]
enum Step {
    Frame,
    NeedMore,
    Close,
}

impl Reader {
    /// Handles the next whole frame, if one is buffered. With an inbox (a
    /// socket's task), the replies to it come straight back into it.
    fn next_frame(&mut self, inbox: Option<&mut Inbox>) -> Step {
        let conn = self.conn;
        if !self.handshaken && crate::core::is_four_letter_word(&self.buf) {
            let word = self.buf.split_to(4);
            lock(&self.shared).four_letter_word(conn, &word);
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
        let (flow, held) = {
            let mut st = lock(&self.shared);
            let flow = match inbox {
                None => st.process(conn, h.xid, h.op_type, req),
                Some(inbox) => serve_own(&mut st, conn, inbox, |st| {
                    st.process(conn, h.xid, h.op_type, req)
                }),
            };
            let held = st.held_request_gate(conn);
            if self.commit.is_none() {
                self.commit = commit_wait(&st, conn);
            }
            (flow, held)
        };
        tracing::trace!(xid = h.xid, op = h.op_type, "request");
        if let Some(open) = held {
            self.held = Some(wait_open(open));
        }
        match flow {
            Flow::Continue => Step::Frame,
            Flow::Close => Step::Close,
        }
    }

    /// Applies what was waiting (a request a `hold_request` fault held,
    /// once its gate opened; the requests whose sync ended) with
    /// `release`, then waits for what that left waiting: a request it held
    /// (one that waited for the handshake's answer, judged now, may meet a
    /// `hold_request` rule) and the next sync. With an inbox (a socket's
    /// task), the replies come straight back into it.
    fn release(
        &mut self,
        inbox: Option<&mut Inbox>,
        release: impl FnOnce(&mut crate::core::State, ConnId) -> Flow,
    ) -> Step {
        let conn = self.conn;
        let mut st = lock(&self.shared);
        let flow = match inbox {
            None => release(&mut st, conn),
            Some(inbox) => serve_own(&mut st, conn, inbox, |st| release(st, conn)),
        };
        if self.held.is_none() {
            self.held = st.held_request_gate(conn).map(wait_open);
        }
        if self.commit.is_none() {
            self.commit = commit_wait(&st, conn);
        }
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
            if !self.release_opened() {
                return false;
            }
            if self.held.is_some() {
                // Its gate has not opened: what follows waits.
                return true;
            }
            match *self.gate.borrow() {
                Gate::Open => {}
                Gate::Closed => return false,
                Gate::Stalled => return true,
            }
            match self.next_frame(None) {
                Step::Frame => continue,
                Step::NeedMore => return true,
                Step::Close => return false,
            }
        }
    }

    /// What the socket's task does when a held request's gate or a sync
    /// opens, for a reader with no task (fuzzing): each is polled once,
    /// with no runtime and no waker (a gate is a watch channel's value; no
    /// latency is set there, so no sync waits on a timer), and what opened
    /// is released. False if that closed the connection.
    fn release_opened(&mut self) -> bool {
        if opened_now(&mut self.commit)
            && self.release(None, |st, c| st.release_commits(c)) == Step::Close
        {
            return false;
        }
        !(opened_now(&mut self.held)
            && self.release(None, |st, c| st.release_request(c)) == Step::Close)
    }

    /// Whether [`feed`](Self::feed) with no new bytes would do nothing:
    /// nothing buffered, no held request or sync whose gate may have
    /// opened, and a gate the server has not closed (a closed one ends the
    /// connection at the next feed). A gate with no change this reader has
    /// not marked seen (a detached reader marks none) is read
    /// with one atomic load, not its lock.
    pub(crate) fn is_idle(&self) -> bool {
        self.buf.is_empty()
            && self.held.is_none()
            && self.commit.is_none()
            && (matches!(self.gate.has_changed(), Ok(false)) || *self.gate.borrow() != Gate::Closed)
    }

    /// A reader for a connection registered without a socket (fuzzing).
    pub(crate) fn detached(shared: Shared, conn: ConnId, gate: watch::Receiver<Gate>) -> Reader {
        let max_packet = lock(&shared).settings().max_packet;
        Reader {
            shared,
            conn,
            gate,
            max_packet,
            buf: BytesMut::new(),
            handshaken: false,
            held: None,
            waited: false,
            commit: None,
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
        if !std::mem::take(&mut self.waited) {
            // A new session is a createSession txn: answered once it is
            // durable (`commit.rs`), and any handshake no sooner than the
            // connect latency. The frame stays buffered meanwhile.
            let synced = if req.session_id == 0 {
                st.durable_after()
            } else {
                None
            };
            let latency = st.settings().connect_latency;
            if synced.is_some() || !latency.is_zero() {
                let until = Instant::now() + latency;
                self.waited = true;
                self.held = Some(Box::pin(async move {
                    if let Some(synced) = synced {
                        synced.wait().await;
                    }
                    if !latency.is_zero() {
                        tokio::time::sleep_until(until).await;
                    }
                }));
                return Step::Frame;
            }
        }
        let _ = self.buf.split_to(4 + len);
        self.handshaken = true;
        match st.connect(conn, &req) {
            Flow::Continue => Step::Frame,
            Flow::Close => Step::Close,
        }
    }
}
