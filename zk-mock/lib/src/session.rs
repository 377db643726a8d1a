//! Sessions: ids and passwords as ZooKeeper makes them, timeout negotiation,
//! deadlines rounded up to tick boundaries (`ExpiryQueue`), and which
//! connection each session is bound to.

use crate::hash::Map;

use bytes::Bytes;

use crate::compact::Sparse;

/// A session id as the server assigned it: the ids the controls, the fault
/// rules, the recorder and the snapshots name sessions by.
///
/// Every method that names a session takes `impl Into<SessionId>`, so a
/// bare `i64` works too, such as `zookeeper_client`'s
/// `client.session_id().0`. It prints as clients log it, `0x` and hex;
/// it parses from that or from decimal; serde reads and writes a number.
///
/// ```
/// use zk_mock::SessionId;
/// let id: SessionId = "0x1000a5b3c0d0001".parse().unwrap();
/// assert_eq!(id, SessionId(0x1000a5b3c0d0001));
/// assert_eq!(id.to_string(), "0x1000a5b3c0d0001");
/// assert_eq!(id, 0x1000a5b3c0d0001_i64);
/// ```
#[derive(
    Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(transparent)]
pub struct SessionId(pub i64);

impl std::fmt::Debug for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionId({self})")
    }
}

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl std::fmt::LowerHex for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::LowerHex::fmt(&self.0, f)
    }
}

impl From<i64> for SessionId {
    fn from(id: i64) -> SessionId {
        SessionId(id)
    }
}

impl From<SessionId> for i64 {
    fn from(id: SessionId) -> i64 {
        id.0
    }
}

impl PartialEq<i64> for SessionId {
    fn eq(&self, other: &i64) -> bool {
        self.0 == *other
    }
}

impl PartialEq<SessionId> for i64 {
    fn eq(&self, other: &SessionId) -> bool {
        *self == other.0
    }
}

/// A session id that is neither decimal nor `0x` hex.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("session {0:?} is not a decimal or 0x-hex integer")]
pub struct BadSessionId(pub String);

impl std::str::FromStr for SessionId {
    type Err = BadSessionId;

    fn from_str(text: &str) -> Result<SessionId, BadSessionId> {
        let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16).ok().map(|v| v as i64),
            None => text.parse::<i64>().ok(),
        };
        parsed
            .map(SessionId)
            .ok_or_else(|| BadSessionId(text.to_string()))
    }
}

/// A connection's identity inside the server.
pub(crate) type ConnId = u64;

/// One session (`SessionTrackerImpl.SessionImpl`).
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// The session id.
    pub(crate) id: i64,
    /// The 16-byte password.
    pub(crate) passwd: [u8; 16],
    /// The negotiated timeout in ms.
    pub(crate) timeout: i32,
    /// When the session expires, in clock ms (rounded up to a tick).
    pub(crate) deadline: u64,
    /// Clock ms of the last packet.
    pub(crate) last_active: u64,
    /// The connection currently serving the session.
    pub(crate) conn: Option<ConnId>,
    /// A read-only server's local session (`Some(server)`): unknown to the
    /// quorum, gone when that server rejoins it.
    pub(crate) local: Option<usize>,
}

/// All live sessions.
#[derive(Debug)]
pub(crate) struct SessionManager {
    sessions: Map<i64, Session>,
    next_id: i64,
    tick: u64,
    min_timeout: i32,
    max_timeout: i32,
}

/// `SessionTrackerImpl.initializeNextSessionId(1)`: high byte = server id 1,
/// then the low 40 bits of a millisecond clock, then a 16-bit counter.
pub(crate) fn initial_session_id(ms: u64) -> i64 {
    let base = (((ms as i64) << 24) as u64 >> 8) as i64;
    base | (1i64 << 56)
}

/// `ZooKeeperServer.generatePasswd`: `new java.util.Random(id ^ 0xB3415C00L).nextBytes(16)`.
pub fn password_for(id: impl Into<SessionId>) -> [u8; 16] {
    let id = id.into().0;
    const MULT: i64 = 0x5DEECE66D;
    const MASK: i64 = (1 << 48) - 1;
    let mut seed = ((id ^ 0xB341_5C00) ^ MULT) & MASK;
    let mut out = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        seed = (seed.wrapping_mul(MULT).wrapping_add(0xB)) & MASK;
        let mut rnd = (seed >> 16) as i32;
        for _ in 0..4.min(16 - i) {
            out[i] = rnd as u8;
            rnd >>= 8;
            i += 1;
        }
    }
    out
}

impl SessionManager {
    /// A manager with ids starting at `initial_session_id(id_clock_ms)`.
    pub(crate) fn new(
        id_clock_ms: u64,
        tick: u64,
        min_timeout: i32,
        max_timeout: i32,
    ) -> SessionManager {
        SessionManager {
            sessions: Map::default(),
            next_id: initial_session_id(id_clock_ms),
            tick: tick.max(1),
            min_timeout,
            max_timeout,
        }
    }

    /// Clamps a requested timeout into `[min, max]`.
    pub(crate) fn negotiate(&self, requested: i32) -> i32 {
        requested.clamp(self.min_timeout, self.max_timeout)
    }

    /// `ExpiryQueue.roundToNextInterval`: deadlines land on tick boundaries.
    fn deadline(&self, now: u64, timeout: i32) -> u64 {
        let t = now + timeout.max(0) as u64;
        (t / self.tick + 1) * self.tick
    }

    /// Creates a session bound to `conn`.
    pub(crate) fn create(&mut self, now: u64, timeout: i32, conn: ConnId) -> &Session {
        let id = self.next_id;
        self.next_id += 1;
        let s = Session {
            id,
            passwd: password_for(id),
            timeout,
            deadline: self.deadline(now, timeout),
            last_active: now,
            conn: Some(conn),
            local: None,
        };
        self.sessions.entry(id).or_insert(s)
    }

    /// Looks a session up.
    pub(crate) fn get(&self, id: i64) -> Option<&Session> {
        self.sessions.get(&id)
    }

    /// Looks a session up for change.
    pub(crate) fn get_mut(&mut self, id: i64) -> Option<&mut Session> {
        self.sessions.get_mut(&id)
    }

    /// Every live session.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Session> {
        self.sessions.values()
    }

    /// Refreshes a session's deadline (`touchSession`); false if it is gone.
    pub(crate) fn touch(&mut self, id: i64, now: u64) -> bool {
        let tick = self.tick;
        match self.sessions.get_mut(&id) {
            Some(s) => {
                let t = now + s.timeout.max(0) as u64;
                s.deadline = (t / tick + 1) * tick;
                s.last_active = now;
                true
            }
            None => false,
        }
    }

    /// Starts every session's timeout afresh (a new leader's tracker).
    pub(crate) fn touch_all(&mut self, now: u64) {
        let ids: Vec<i64> = self.sessions.keys().copied().collect();
        for id in ids {
            self.touch(id, now);
        }
    }

    /// Re-attaches a session with a new timeout; false if unknown or the password is wrong.
    pub(crate) fn reattach(
        &mut self,
        id: i64,
        passwd: Option<&Bytes>,
        timeout: i32,
        conn: ConnId,
        now: u64,
    ) -> bool {
        let ok = match (self.sessions.get(&id), passwd) {
            (Some(s), Some(p)) => p[..] == s.passwd[..],
            _ => false,
        };
        if ok {
            let s = self.sessions.get_mut(&id).expect("checked");
            s.timeout = timeout;
            s.conn = Some(conn);
            self.touch(id, now);
        }
        ok
    }

    /// Removes a session.
    pub(crate) fn remove(&mut self, id: i64) -> Option<Session> {
        let s = self.sessions.remove(&id);
        self.sessions.shrink_if_sparse();
        s
    }

    /// Sessions whose deadline has passed.
    pub(crate) fn expired(&self, now: u64) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .sessions
            .values()
            .filter(|s| s.deadline <= now)
            .map(|s| s.id)
            .collect();
        ids.sort_unstable();
        ids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_look_like_a_standalone_server_and_increment() {
        let mut m = SessionManager::new(0x12_3456_789a, 2000, 4000, 40000);
        let a = m.create(0, 4000, 1).id;
        let b = m.create(0, 4000, 2).id;
        assert_eq!(a >> 56, 1);
        assert_eq!(a & 0xffff, 0);
        assert_eq!(b, a + 1);
    }

    #[test]
    fn password_matches_java_random() {
        // `new java.util.Random(id ^ 0xB3415C00L).nextBytes(new byte[16])`, printed by a JVM.
        let java = |v: [i8; 16]| v.map(|b| b as u8);
        assert_eq!(
            password_for(0),
            java([-14, 42, -51, 74, -105, -26, -99, 109, 32, -92, -101, -74, 56, -22, -37, 56])
        );
        assert_eq!(
            password_for(12345),
            java([-101, -6, 109, 48, 66, 71, -102, 5, 49, 41, 63, 80, 16, -11, -124, 25])
        );
        assert_eq!(
            password_for(0x100008ae3e30000),
            java([127, -75, 89, 81, -96, -110, -21, 123, -11, -7, -119, -4, -23, -45, -49, -10])
        );
    }

    #[test]
    fn deadlines_round_up_to_the_next_tick() {
        let mut m = SessionManager::new(0, 2000, 4000, 40000);
        let s = m.create(100, 4000, 1).clone();
        assert_eq!(s.deadline, 6000);
        assert!(m.expired(5999).is_empty());
        assert_eq!(m.expired(6000), vec![s.id]);
        assert!(m.touch(s.id, 4000));
        assert_eq!(m.get(s.id).unwrap().deadline, 10000);
    }

    #[test]
    fn negotiation_clamps() {
        let m = SessionManager::new(0, 2000, 4000, 40000);
        assert_eq!(m.negotiate(100), 4000);
        assert_eq!(m.negotiate(100_000), 40000);
        assert_eq!(m.negotiate(10_000), 10_000);
    }

    #[test]
    fn reattach_needs_the_right_password() {
        let mut m = SessionManager::new(0, 2000, 4000, 40000);
        let s = m.create(0, 4000, 1).clone();
        assert!(!m.reattach(s.id, Some(&Bytes::from_static(&[0; 16])), 5000, 2, 0));
        assert!(m.reattach(s.id, Some(&Bytes::copy_from_slice(&s.passwd)), 5000, 2, 0));
        assert_eq!(m.get(s.id).unwrap().conn, Some(2));
        assert!(!m.reattach(99, Some(&Bytes::copy_from_slice(&s.passwd)), 5000, 2, 0));
    }
}
