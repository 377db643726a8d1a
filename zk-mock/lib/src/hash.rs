//! The hash maps behind the server's tables: std's `HashMap` with
//! foldhash's hasher. Every request hashes a few short keys (its path, its
//! parent's, a session or connection id) into these tables; SipHash, std's
//! default, was an eighth of the server's own time on a create. foldhash is
//! several times faster on such keys and still seeded per process, so a
//! client cannot choose colliding paths ahead of time.

/// A hash map with foldhash's seeded hasher.
pub(crate) type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
