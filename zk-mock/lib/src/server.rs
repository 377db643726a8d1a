//! A server's tasks beside its connections: the accept loops (plain and
//! TLS), the session-expiry ticker, the lag loop (which applies a
//! time-lagged follower's txns as they fall due) and the container check's
//! timer.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::core::{lock, Shared};
use crate::handler;
use crate::listen::Port;

/// What hands a secure-port connection to TLS.
#[cfg(feature = "tls")]
pub(crate) type Acceptor = tokio_rustls::TlsAcceptor;

/// Without the `tls` feature there is no secure port, so no acceptor.
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone)]
pub(crate) enum Acceptor {}

/// A port to serve: its handle, the listener bound to it, and for the
/// secure port the TLS acceptor.
pub(crate) type Listening = (Arc<Port>, std::net::TcpListener, Option<Acceptor>);

/// Serves every server of the ensemble (one client port each; the secure
/// port is server 0's) until `shutdown` flips, with the timers they share.
pub(crate) async fn run(
    ports: Vec<Listening>,
    secure: Option<Listening>,
    shared: Shared,
    shutdown: watch::Receiver<bool>,
) {
    let lag = tokio::spawn(lag_loop(shared.clone(), shutdown.clone()));
    let tick = Duration::from_millis(lock(&shared).settings().tick_time.max(1));
    let check_interval =
        Duration::from_millis(lock(&shared).settings().container_check_interval_ms.max(1));
    let timers = [
        tokio::spawn(expiry_loop(shared.clone(), tick, shutdown.clone())),
        tokio::spawn(container_loop(
            shared.clone(),
            check_interval,
            shutdown.clone(),
        )),
    ];
    // Server 0's secure port is served beside its client port.
    let loops: Vec<_> = secure
        .map(|l| (0, l))
        .into_iter()
        .chain(ports.into_iter().enumerate())
        .map(|(i, l)| tokio::spawn(accept_loop(i, l, shared.clone(), shutdown.clone())))
        .collect();
    for l in loops {
        let _ = l.await;
    }
    for t in timers {
        t.abort();
    }
    lag.abort();
}

/// Applies time-lagged txns as they fall due (`Lag::Time`): sleeps until the
/// next is due, or until a commit wakes it.
async fn lag_loop(shared: Shared, mut shutdown: watch::Receiver<bool>) {
    let wake = lock(&shared).lag_wake();
    loop {
        let wait = {
            let st = lock(&shared);
            st.next_lag_due()
                .map(|due| Duration::from_millis(due.saturating_sub(st.now_ms()).max(1)))
        };
        let sleep = async {
            match wait {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = sleep => lock(&shared).settle_all(),
            _ = wake.notified() => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// One port's accept loop. While its server is killed the port is closed
/// ([`Port::close`]); the loop then waits for it to reopen.
async fn accept_loop(
    server: usize,
    (port, listener, tls): Listening,
    shared: Shared,
    mut shutdown: watch::Receiver<bool>,
) {
    let register = |l: std::net::TcpListener| match TcpListener::from_std(l) {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::error!(server, addr = %port.addr(), %e, "cannot register the listener");
            None
        }
    };
    let mut listener = register(listener);
    loop {
        let accepted = tokio::select! {
            r = accept(listener.as_ref()) => r,
            fresh = port.changed() => {
                match fresh {
                    Some(l) => listener = register(l),
                    None if !port.is_open() => listener = None,
                    None => {}
                }
                continue;
            }
            _ = shutdown.changed() => break,
        };
        match accepted {
            Ok((socket, peer)) => {
                let refused = {
                    let st = lock(&shared);
                    st.refuses(server)
                };
                if refused {
                    // A `refuse connections` fault, or a server cut off from
                    // its quorum: the client sees the connection closed
                    // before any handshake, and moves on to the next server.
                    // (A server that is up but not serving takes the
                    // connection: it answers four-letter words and closes a
                    // handshake.)
                    tracing::debug!(server, %peer, "refusing connection");
                    drop(socket);
                    continue;
                }
                match tls.clone() {
                    None => {
                        tokio::spawn(handler::serve(
                            shared.clone(),
                            socket,
                            peer,
                            server,
                            shutdown.clone(),
                        ));
                    }
                    Some(acceptor) => serve_secure(&shared, acceptor, socket, peer, &shutdown),
                }
            }
            Err(_) if !port.is_open() => listener = None,
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(%e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

/// Serves a secure-port connection: TLS, then the protocol.
#[cfg(feature = "tls")]
fn serve_secure(
    shared: &Shared,
    acceptor: Acceptor,
    socket: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    shutdown: &watch::Receiver<bool>,
) {
    tokio::spawn(crate::tls::serve(
        shared.clone(),
        acceptor,
        socket,
        peer,
        shutdown.clone(),
    ));
}

#[cfg(not(feature = "tls"))]
fn serve_secure(
    _: &Shared,
    acceptor: Acceptor,
    _: tokio::net::TcpStream,
    _: std::net::SocketAddr,
    _: &watch::Receiver<bool>,
) {
    match acceptor {}
}

/// The next connection; never, while the port is closed.
async fn accept(
    listener: Option<&TcpListener>,
) -> std::io::Result<(tokio::net::TcpStream, std::net::SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Runs the container check on schedule (`ContainerManager`'s timer). The
/// check goes by the session clock: on a manual clock it runs when the
/// clock is advanced past its time, not here.
async fn container_loop(shared: Shared, every: Duration, mut shutdown: watch::Receiver<bool>) {
    let mut interval = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => lock(&shared).check_containers_due(),
            _ = shutdown.changed() => return,
        }
    }
}

/// Checks session deadlines at every tick, as `SessionTrackerImpl` does.
async fn expiry_loop(shared: Shared, tick: Duration, mut shutdown: watch::Receiver<bool>) {
    // Deadlines sit on tick boundaries; checking a little more often than once
    // a tick keeps expiry close to the boundary without busy work.
    let mut interval = tokio::time::interval(tick / 4);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = interval.tick() => lock(&shared).expire_due(),
            _ = shutdown.changed() => return,
        }
    }
}
