//! The accept loop and the session-expiry ticker.

use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::core::{lock, Shared};
use crate::handler;

/// What hands a secure-port connection to TLS.
#[cfg(feature = "tls")]
pub(crate) type Acceptor = tokio_rustls::TlsAcceptor;

/// Without the `tls` feature there is no secure port, so no acceptor.
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone)]
pub(crate) enum Acceptor {}

/// The secure client port: its listener and TLS acceptor.
pub(crate) type Secure = (TcpListener, Acceptor);

/// Serves every server of the ensemble (one listener each; the secure port
/// is server 0's) until `shutdown` flips, with the timers they share.
pub(crate) async fn run(
    listeners: Vec<TcpListener>,
    secure: Option<Secure>,
    shared: Shared,
    shutdown: watch::Receiver<bool>,
) {
    let lag = tokio::spawn(lag_loop(shared.clone(), shutdown.clone()));
    let mut others = Vec::new();
    let mut listeners = listeners.into_iter().enumerate();
    let Some((_, first)) = listeners.next() else {
        return;
    };
    for (i, l) in listeners {
        others.push(tokio::spawn(accept_loop(
            i,
            l,
            None,
            shared.clone(),
            shutdown.clone(),
        )));
    }
    accept_loop(0, first, secure, shared, shutdown).await;
    for t in others {
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

/// One server's accept loop (server 0 also runs the timers).
async fn accept_loop(
    server: usize,
    listener: TcpListener,
    secure: Option<Secure>,
    shared: Shared,
    mut shutdown: watch::Receiver<bool>,
) {
    let tick = Duration::from_millis(lock(&shared).settings().tick_time.max(1));
    let timers = (server == 0).then(|| {
        let check_interval =
            Duration::from_millis(lock(&shared).settings().container_check_interval_ms.max(1));
        (
            tokio::spawn(expiry_loop(shared.clone(), tick, shutdown.clone())),
            tokio::spawn(container_loop(
                shared.clone(),
                check_interval,
                shutdown.clone(),
            )),
        )
    });
    loop {
        // A connection on either port; the secure one is handed to TLS.
        let (accepted, tls) = tokio::select! {
            r = listener.accept() => (r, None),
            r = accept_secure(secure.as_ref()) => (r, secure.as_ref().map(|(_, a)| a.clone())),
            _ = shutdown.changed() => break,
        };
        match accepted {
            Ok((socket, peer)) => {
                let refused = {
                    let st = lock(&shared);
                    st.refuses(server)
                };
                if refused {
                    // A `refuse connections` fault, or a killed server: the
                    // client sees the connection closed before any handshake,
                    // and moves on to the next server. (A server that is up
                    // but not serving takes the connection: it answers
                    // four-letter words and closes a handshake.)
                    tracing::debug!(server, %peer, "refusing connection");
                    drop(socket);
                    continue;
                }
                match tls {
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
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(%e, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    if let Some((ticker, containers)) = timers {
        ticker.abort();
        containers.abort();
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

/// The next connection on the secure port; never, without one.
async fn accept_secure(
    secure: Option<&Secure>,
) -> std::io::Result<(tokio::net::TcpStream, std::net::SocketAddr)> {
    match secure {
        Some((listener, _)) => listener.accept().await,
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
