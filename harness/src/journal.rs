//! What the clients observed, with times since the scenario started, and the
//! in-process "guarded resource" they touch while they hold the lock.

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// What happened to a client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Event {
    /// Connecting a session.
    Connecting,
    /// Connected with this session.
    Connected {
        /// The session id.
        session: i64,
    },
    /// Started to acquire (round n).
    Waiting {
        /// The round.
        round: usize,
    },
    /// Holds the lock.
    Acquired {
        /// The round.
        round: usize,
        /// The fencing token (the lock node's czxid; 0 if unknown).
        token: i64,
        /// The lock node, if the recipe tells.
        path: Option<String>,
    },
    /// Gave the round up: busy (try) or timed out.
    GaveUp {
        /// The round.
        round: usize,
        /// Why.
        reason: String,
    },
    /// Disconnected while holding (the lock may be gone: stop working).
    Suspended,
    /// Reconnected within the session while holding.
    Resumed,
    /// The guard reported the lock lost.
    Lost,
    /// Entered the critical section (touched the resource).
    Enter {
        /// The token used.
        token: i64,
        /// The entry marker's path (records written before this field have
        /// none: their entries are taken at their word).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        marker: Option<String>,
    },
    /// Left the critical section: abandoned it (suspended or lost; no
    /// marker), or finished it as holder with a last touch of the resource,
    /// the exit marker, whose creation the server's history confirms or not.
    Exit {
        /// The exit marker's path, when the client finished as holder.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        marker: Option<String>,
    },
    /// Started to release.
    Releasing,
    /// Released the lock.
    Released {
        /// Whether release succeeded.
        ok: bool,
    },
    /// The session expired.
    Expired,
    /// An operation failed with an error.
    Error {
        /// The error.
        message: String,
        /// Whether its outcome is unknown (connection loss, expiry mid-call).
        indefinite: bool,
        /// For an indefinite acquire: what the server said right after —
        /// the lock node the session owns, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resolved: Option<String>,
    },
    /// A fault was applied to this client.
    Fault {
        /// Which.
        what: String,
    },
    /// The client is done.
    Done,
}

/// One observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Since the scenario started.
    #[serde(rename = "t_ms", serialize_with = "ser_ms", deserialize_with = "de_ms")]
    pub t: Duration,
    /// The client (or `harness` for faults without one).
    pub client: String,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

pub(crate) fn ser_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64() * 1000.0)
}

pub(crate) fn de_ms<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let ms = f64::deserialize(d)?;
    Duration::try_from_secs_f64(ms / 1000.0).map_err(serde::de::Error::custom)
}

#[derive(Debug, Default)]
struct Inner {
    entries: Vec<Entry>,
    acquisitions: usize,
    holders: BTreeMap<String, i64>,
    sessions: BTreeMap<String, i64>,
}

/// The shared journal of one scenario run.
#[derive(Debug, Clone)]
pub struct Journal {
    start: Instant,
    inner: Arc<Mutex<Inner>>,
    changed: Arc<watch::Sender<u64>>,
    /// Acquisitions so far, for a progress display.
    progress: Option<Arc<std::sync::atomic::AtomicUsize>>,
}

impl Journal {
    pub(crate) fn new(start: Instant) -> Journal {
        Journal {
            start,
            inner: Arc::new(Mutex::new(Inner::default())),
            changed: Arc::new(watch::channel(0).0),
            progress: None,
        }
    }

    /// Counts acquisitions into `counter` too (reset to 0 now).
    pub(crate) fn with_progress(
        mut self,
        counter: Option<Arc<std::sync::atomic::AtomicUsize>>,
    ) -> Journal {
        if let Some(c) = &counter {
            c.store(0, std::sync::atomic::Ordering::Relaxed);
        }
        self.progress = counter;
        self
    }

    /// Time since the scenario started.
    pub(crate) fn now(&self) -> Duration {
        self.start.elapsed()
    }

    /// Records an event.
    pub(crate) fn log(&self, client: &str, event: Event) {
        let t = self.now();
        {
            let mut i = self.inner.lock();
            match &event {
                Event::Connected { session } => {
                    i.sessions.insert(client.to_string(), *session);
                }
                Event::Acquired { token, .. } => {
                    i.acquisitions += 1;
                    if let Some(p) = &self.progress {
                        p.store(i.acquisitions, std::sync::atomic::Ordering::Relaxed);
                    }
                    i.holders.insert(client.to_string(), *token);
                }
                Event::Released { .. } | Event::Lost | Event::Expired | Event::Done => {
                    i.holders.remove(client);
                }
                _ => {}
            }
            i.entries.push(Entry {
                t,
                client: client.to_string(),
                event,
            });
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// A client enters the critical section (its entry marker is on its
    /// way); the resource judges it after the run (module `resource`).
    pub(crate) fn enter(&self, client: &str, token: i64, marker: String) {
        self.log(
            client,
            Event::Enter {
                token,
                marker: Some(marker),
            },
        );
    }

    /// A client finished its critical section as holder: `marker` is its
    /// last touch of the resource.
    pub(crate) fn finish(&self, client: &str, marker: String) {
        self.log(
            client,
            Event::Exit {
                marker: Some(marker),
            },
        );
    }

    /// A client abandons the critical section (suspended or lost), without
    /// touching the resource again.
    pub(crate) fn abandon(&self, client: &str) {
        self.log(client, Event::Exit { marker: None });
    }

    /// A receiver that changes on every event.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    /// Total acquisitions so far.
    pub(crate) fn acquisitions(&self) -> usize {
        self.inner.lock().acquisitions
    }

    /// Clients holding the lock now.
    pub(crate) fn holders(&self) -> Vec<String> {
        self.inner.lock().holders.keys().cloned().collect()
    }

    /// Every client's current session.
    pub(crate) fn sessions(&self) -> BTreeMap<String, i64> {
        self.inner.lock().sessions.clone()
    }

    /// Everything observed, in order.
    pub(crate) fn entries(&self) -> Vec<Entry> {
        self.inner.lock().entries.clone()
    }

    /// Clients whose latest Waiting has no later Acquired/GaveUp/Error/Expired/Done.
    pub(crate) fn waiting(&self) -> Vec<String> {
        let i = self.inner.lock();
        let mut state: BTreeMap<&str, bool> = BTreeMap::new();
        for e in &i.entries {
            match e.event {
                Event::Waiting { .. } => {
                    state.insert(&e.client, true);
                }
                Event::Acquired { .. }
                | Event::GaveUp { .. }
                | Event::Error { .. }
                | Event::Expired
                | Event::Done => {
                    state.insert(&e.client, false);
                }
                _ => {}
            }
        }
        state
            .into_iter()
            .filter(|(_, w)| *w)
            .map(|(c, _)| c.to_string())
            .collect()
    }
}
