//! A server's listening port, which a kill closes and a restart opens again.
//!
//! A killed ZooKeeper is a dead process: its port is free, a client that
//! tries it is refused, and another server may take it. Curator's
//! `TestingServer.stop()` relies on that (a test stops one server and starts
//! another on the same port). So a killed server here stops listening before
//! the kill returns, and a restart binds the same address again, failing as
//! a restarted ZooKeeper would if something else has taken the port.
//!
//! The accept loop owns the listener it polls; [`Port`] keeps a duplicate of
//! its descriptor, so that [`Port::close`] can shut the socket at once from
//! any thread (the loop then drops its copy), and hands a fresh listener to
//! the loop on [`Port::reopen`].

use std::net::SocketAddr;
use std::sync::Mutex;

use socket2::{Domain, Socket, Type};

/// One listening address of a server (its client port, or its secure port).
#[derive(Debug)]
pub(crate) struct Port {
    addr: SocketAddr,
    backlog: u32,
    inner: Mutex<Inner>,
    /// Wakes the accept loop when the port closes or a fresh listener waits.
    wake: tokio::sync::Notify,
}

#[derive(Debug)]
struct Inner {
    /// A duplicate descriptor of the open listener, or `None` while closed.
    live: Option<Socket>,
    /// A listener opened by [`Port::reopen`] that the accept loop has not taken yet.
    fresh: Option<std::net::TcpListener>,
}

impl Port {
    /// Binds `addr` (port 0: a free one) with this accept backlog; the
    /// listener is the accept loop's, the port its handle.
    pub(crate) fn bind(
        addr: SocketAddr,
        backlog: u32,
    ) -> std::io::Result<(Port, std::net::TcpListener)> {
        let listener = listen(addr, backlog)?;
        let port = Port {
            addr: listener.local_addr()?,
            backlog,
            inner: Mutex::new(Inner {
                live: Some(Socket::from(listener.try_clone()?)),
                fresh: None,
            }),
            wake: tokio::sync::Notify::new(),
        };
        Ok((port, listener))
    }

    /// The bound address.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether it is listening.
    pub(crate) fn is_open(&self) -> bool {
        self.inner().live.is_some()
    }

    /// Stops listening. When this returns, connection attempts are refused
    /// and the address can be bound by another server (with
    /// `SO_REUSEADDR`, as ZooKeeper's and this one's listeners set it).
    /// Connections not yet accepted are reset. False if it was closed.
    pub(crate) fn close(&self) -> bool {
        let mut inner = self.inner();
        inner.fresh = None;
        let Some(socket) = inner.live.take() else {
            return false;
        };
        // Shutting a listening socket down takes it out of the listening
        // state for every descriptor of it, the accept loop's included.
        if let Err(e) = socket.shutdown(std::net::Shutdown::Both) {
            tracing::warn!(addr = %self.addr, %e, "cannot shut the listener down");
        }
        drop(inner);
        self.wake.notify_one();
        true
    }

    /// Listens on the same address again (nothing if it is open).
    ///
    /// # Errors
    /// The OS's, when the address cannot be bound: another server has it.
    pub(crate) fn reopen(&self) -> std::io::Result<()> {
        let mut inner = self.inner();
        if inner.live.is_some() {
            return Ok(());
        }
        let listener = listen(self.addr, self.backlog)?;
        inner.live = Some(Socket::from(listener.try_clone()?));
        inner.fresh = Some(listener);
        drop(inner);
        self.wake.notify_one();
        Ok(())
    }

    /// For the accept loop: waits until the port closes or reopens, then
    /// gives the listener to poll from now on (`None` while closed).
    pub(crate) async fn changed(&self) -> Option<std::net::TcpListener> {
        self.wake.notified().await;
        self.inner().fresh.take()
    }
}

/// A non-blocking listener with an explicit backlog (std's `bind` uses 128).
fn listen(addr: SocketAddr, backlog: u32) -> std::io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(addr: SocketAddr) -> bool {
        matches!(
            std::net::TcpStream::connect(addr),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused
        )
    }

    #[test]
    fn a_closed_port_refuses_and_is_free_until_it_reopens() {
        let (port, listener) = Port::bind("127.0.0.1:0".parse().unwrap(), 16).unwrap();
        let addr = port.addr();
        assert!(std::net::TcpStream::connect(addr).is_ok());
        assert!(port.close());
        assert!(!port.close() && !port.is_open());
        // The accept loop's descriptor is still open, yet the port refuses
        // and another server can listen on it.
        assert!(refused(addr));
        let (other, other_listener) = Port::bind(addr, 16).unwrap();
        assert!(std::net::TcpStream::connect(addr).is_ok());
        // While the other has it, this one cannot reopen.
        let e = port.reopen().unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}");
        assert!(other.close());
        drop((other_listener, listener));
        port.reopen().unwrap();
        assert!(port.is_open());
        let fresh = port.inner().fresh.take().expect("a fresh listener");
        assert_eq!(fresh.local_addr().unwrap(), addr);
        assert!(std::net::TcpStream::connect(addr).is_ok());
        // Now bound to the port by number, as `--port 2181` is: closed, it
        // frees the port all the same.
        assert!(port.close());
        assert!(refused(addr));
        let (again, _l) = Port::bind(addr, 16).unwrap();
        assert!(again.is_open() && port.reopen().is_err());
        drop(fresh);
    }
}
