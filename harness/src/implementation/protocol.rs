//! The driver protocol's messages (`harness/DRIVERS.md`): newline-delimited
//! JSON, one object per line, requests with an `id` from the harness, replies
//! with the same `id` and unprompted events from the driver.

use serde::{Deserialize, Serialize};

/// The protocol version this harness speaks.
pub const PROTOCOL: u32 = 1;

/// The lock a client opens: its kind, its directory, and optionally one of
/// zk-lock's recipes and node layouts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockSpec {
    /// `exclusive`, `read-write`, `semaphore` or `reentrant`.
    pub kind: String,
    /// The lock's directory.
    pub path: String,
    /// One of zk-lock's recipes (`herd`, `naive`, …), when the scenario names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<String>,
    /// zk-lock's node layout (`curator` or `kazoo`), when the scenario names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
}

/// A request, harness → driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// The first request.
    Init {
        /// [`PROTOCOL`].
        protocol: u32,
    },
    /// Connect a client and create its lock objects.
    Open {
        /// The client's name.
        client: String,
        /// A ZooKeeper connect string.
        connect: String,
        /// The session timeout to ask for.
        session_timeout_ms: u64,
        /// The lock.
        lock: LockSpec,
    },
    /// Acquire.
    Acquire {
        /// The client.
        client: String,
        /// `exclusive`, `read` or `write`.
        role: String,
        /// `block`, `timeout` or `try`.
        mode: String,
        /// With `timeout`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout_ms: Option<u64>,
    },
    /// Release what the client holds.
    Release {
        /// The client.
        client: String,
    },
    /// Create a persistent marker node through the client's own session.
    Touch {
        /// The client.
        client: String,
        /// The marker's path.
        path: String,
        /// Its data.
        data: String,
    },
    /// Close the client's session.
    Close {
        /// The client.
        client: String,
    },
    /// Drop the client without closing its session.
    Crash {
        /// The client.
        client: String,
    },
    /// Close every client, forget them, and serve run `run` next (only to a
    /// driver whose `init` said `reuse`).
    Reset {
        /// The next run's number (1, 2, …; the run before the first reset is 0).
        /// Every event about a client opened after this reset carries it.
        run: u64,
    },
    /// Close everything and exit.
    Shutdown,
}

impl Op {
    /// The client a request is for, if any.
    pub fn client(&self) -> Option<&str> {
        match self {
            Op::Open { client, .. }
            | Op::Acquire { client, .. }
            | Op::Release { client }
            | Op::Touch { client, .. }
            | Op::Close { client }
            | Op::Crash { client } => Some(client),
            Op::Init { .. } | Op::Reset { .. } | Op::Shutdown => None,
        }
    }

    /// The op's name, as on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Init { .. } => "init",
            Op::Open { .. } => "open",
            Op::Acquire { .. } => "acquire",
            Op::Release { .. } => "release",
            Op::Touch { .. } => "touch",
            Op::Close { .. } => "close",
            Op::Crash { .. } => "crash",
            Op::Reset { .. } => "reset",
            Op::Shutdown => "shutdown",
        }
    }
}

/// A request line: an id and an op.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Unique in the run.
    pub id: u64,
    /// What to do.
    #[serde(flatten)]
    pub op: Op,
}

/// Whether a failed operation may have happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// It did not happen.
    Definite,
    /// Unknown: connection loss, expiry mid-call, an unexplained failure.
    Indefinite,
}

/// A failed operation, as the driver reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code} ({class:?}): {message}")]
pub struct OpError {
    /// Whether it may have happened.
    pub class: ErrorClass,
    /// The library's name for the error.
    pub code: String,
    /// For people.
    #[serde(default)]
    pub message: String,
}

impl OpError {
    /// A definite error.
    pub fn definite(code: &str, message: impl Into<String>) -> OpError {
        OpError {
            class: ErrorClass::Definite,
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// An indefinite error.
    pub fn indefinite(code: &str, message: impl Into<String>) -> OpError {
        OpError {
            class: ErrorClass::Indefinite,
            code: code.to_string(),
            message: message.into(),
        }
    }

    /// The session expired (ZooKeeper's SESSIONEXPIRED, in the names the
    /// libraries give it: `SessionExpired`, kazoo's `SessionExpiredError`).
    pub fn session_expired(&self) -> bool {
        matches!(self.code.as_str(), "SessionExpired" | "SessionExpiredError")
    }

    /// From a `release`: the lock had been lost before it (`LockLost`), or
    /// the session expired under it. Either is the library telling its
    /// holder that the lock is gone.
    pub fn says_lock_lost(&self) -> bool {
        self.code == "LockLost" || self.session_expired()
    }
}

/// A connection state the library reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnState {
    /// A session is established (the first, or a new one).
    Connected,
    /// The connection is gone; the session may live.
    Suspended,
    /// Connected again to the same session.
    Reconnected,
    /// The session is gone.
    Lost,
}

/// A line from the driver: a reply or an event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Line {
    /// The answer to request `id`.
    Reply(Reply),
    /// Something the driver reports unprompted.
    Event(Event),
}

/// A reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// The request's id.
    pub id: u64,
    /// Whether it succeeded.
    pub ok: bool,
    /// Why not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<OpError>,
    /// `open`: the session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<i64>,
    /// `acquire`: whether the lock is held now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquired: Option<bool>,
    /// `acquire`: the lock node, if the library tells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `init`: the implementation's name and version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation: Option<String>,
    /// `init`: kind → the class it uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kinds: Option<std::collections::BTreeMap<String, String>>,
    /// `init`: zk-lock recipes it understands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipes: Option<Vec<String>>,
    /// `init`: the driver can serve successive runs (`reset` between them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse: Option<bool>,
}

impl Reply {
    /// A bare success.
    pub fn ok(id: u64) -> Reply {
        Reply {
            id,
            ok: true,
            error: None,
            session: None,
            acquired: None,
            node: None,
            implementation: None,
            kinds: None,
            recipes: None,
            reuse: None,
        }
    }

    /// A failure.
    pub fn err(id: u64, e: OpError) -> Reply {
        Reply {
            ok: false,
            error: Some(e),
            ..Reply::ok(id)
        }
    }
}

/// The run an event belongs to: the `run` of the last `reset` before its
/// client was opened (absent or 0 before the first reset).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct RunTag {
    /// The run.
    #[serde(default)]
    pub run: Option<u64>,
}

/// An unprompted line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The library's connection state.
    State {
        /// The client.
        client: String,
        /// The state.
        state: ConnState,
        /// The current session, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        session: Option<i64>,
    },
    /// The library says the lock itself was lost.
    Lock {
        /// The client.
        client: String,
        /// Only `lost`.
        state: String,
    },
    /// For the harness's log.
    Log {
        /// The client, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        client: Option<String>,
        /// The text.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_read_as_documented() {
        let r: Request = serde_json::from_str(
            r#"{"id":2,"op":"open","client":"a","connect":"127.0.0.1:1","session_timeout_ms":2000,"lock":{"kind":"exclusive","path":"/l"}}"#,
        )
        .unwrap();
        assert_eq!(r.id, 2);
        assert_eq!(r.op.client(), Some("a"));
        let back = serde_json::to_string(&r).unwrap();
        assert!(back.contains(r#""op":"open""#), "{back}");
        let s: Request = serde_json::from_str(r#"{"id":9,"op":"shutdown"}"#).unwrap();
        assert_eq!(s.op, Op::Shutdown);
        let r: Request = serde_json::from_str(r#"{"id":10,"op":"reset","run":2}"#).unwrap();
        assert_eq!(r.op, Op::Reset { run: 2 });
        assert_eq!(r.op.client(), None);
    }

    #[test]
    fn replies_and_events_are_told_apart() {
        let l: Line = serde_json::from_str(r#"{"id":4,"ok":true,"acquired":true}"#).unwrap();
        assert!(matches!(
            l,
            Line::Reply(Reply {
                acquired: Some(true),
                ..
            })
        ));
        let l: Line = serde_json::from_str(
            r#"{"id":7,"ok":false,"error":{"class":"indefinite","code":"ConnectionLoss","message":"x"}}"#,
        )
        .unwrap();
        let Line::Reply(r) = l else { panic!() };
        assert_eq!(r.error.unwrap().class, ErrorClass::Indefinite);
        let l: Line = serde_json::from_str(
            r#"{"event":"state","client":"a","state":"suspended","session":72057594037927937}"#,
        )
        .unwrap();
        assert_eq!(
            l,
            Line::Event(Event::State {
                client: "a".into(),
                state: ConnState::Suspended,
                session: Some(72057594037927937)
            })
        );
        assert!(serde_json::from_str::<Line>(r#"{"id":1,"ok":true,"bogus":1}"#).is_err());
        assert!(
            serde_json::from_str::<Line>(r#"{"event":"state","client":"a","state":"weird"}"#)
                .is_err()
        );
    }
}
