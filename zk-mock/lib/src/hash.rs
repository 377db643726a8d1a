//! The hash maps behind the server's tables.
//!
//! - [`Map`]: std's `HashMap` with foldhash's hasher, for tables keyed by
//!   ids. Every request hashes a few short keys into these tables; SipHash,
//!   std's default, was an eighth of the server's own time on a create.
//!   foldhash is several times faster on such keys and still seeded per
//!   process, so a client cannot choose colliding paths ahead of time.
//! - [`StrMap`]: the tables keyed by a path or a child's name (a node's
//!   children, a session's ephemerals, the per-path counters). These grow
//!   with every create, so each entry keeps its key's hash: a table that
//!   doubles moves its entries without hashing a single string again, and a
//!   lookup followed by an insert hashes the key once and copies it only
//!   when the key is new. A key is an `Arc<str>`: a child set shares each
//!   path with the tree's node table ([`StrMap::insert_new_shared`]), so a
//!   write copies its path once. The node table's own index
//!   (`tree/table.rs`) is smaller still: 8 bytes a node.

use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::hash_table::{Entry, HashTable};

/// A hash map with foldhash's seeded hasher.
pub(crate) type Map<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A map from strings, each entry keeping its key's hash.
#[derive(Clone)]
pub(crate) struct StrMap<V> {
    table: HashTable<Slot<V>>,
    hasher: foldhash::fast::RandomState,
}

#[derive(Clone)]
struct Slot<V> {
    hash: u64,
    key: Arc<str>,
    value: V,
}

impl<V> Default for StrMap<V> {
    fn default() -> Self {
        StrMap {
            table: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }
}

impl<V: std::fmt::Debug> std::fmt::Debug for StrMap<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<V> StrMap<V> {
    /// `key`'s hash, for a lookup and an insert of the same key that hash
    /// it once ([`get_hashed`](Self::get_hashed),
    /// [`get_or_insert_shared_hashed`](Self::get_or_insert_shared_hashed)).
    pub(crate) fn hash(&self, key: &str) -> u64 {
        self.hasher.hash_one(key)
    }

    /// [`get`](Self::get) with `key`'s [`hash`](Self::hash) given.
    pub(crate) fn get_hashed(&self, hash: u64, key: &str) -> Option<&V> {
        self.table
            .find(hash, |s| s.hash == hash && &*s.key == key)
            .map(|s| &s.value)
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&V> {
        self.get_hashed(self.hash(key), key)
    }

    /// Adds `key` with `value` if it is not in, keeping the key as given
    /// (shared, not copied); false (and nothing changes) if it is.
    pub(crate) fn insert_new_shared(&mut self, key: Arc<str>, value: V) -> bool {
        let (hash, entry) = self.entry(&key);
        match entry {
            Entry::Occupied(_) => false,
            Entry::Vacant(v) => {
                v.insert(Slot { hash, key, value });
                true
            }
        }
    }

    /// Whether `key` is in.
    pub(crate) fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Sets `key`'s value; returns the one it replaces. The key is copied
    /// only if it is new.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, key: &str, value: V) -> Option<V> {
        let (hash, entry) = self.entry(key);
        match entry {
            Entry::Occupied(mut o) => Some(std::mem::replace(&mut o.get_mut().value, value)),
            Entry::Vacant(v) => {
                v.insert(Slot {
                    hash,
                    key: key.into(),
                    value,
                });
                None
            }
        }
    }

    /// The value of `key`, made by `make` if it is not in.
    pub(crate) fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> V) -> &mut V {
        let (hash, entry) = self.entry(key);
        match entry {
            Entry::Occupied(o) => &mut o.into_mut().value,
            Entry::Vacant(v) => {
                &mut v
                    .insert(Slot {
                        hash,
                        key: key.into(),
                        value: make(),
                    })
                    .into_mut()
                    .value
            }
        }
    }

    /// `key`'s hash and its entry: one hashing for a lookup and an insert.
    fn entry(&mut self, key: &str) -> (u64, Entry<'_, Slot<V>>) {
        let h = self.hash(key);
        let entry = self
            .table
            .entry(h, |s| s.hash == h && &*s.key == key, |s| s.hash);
        (h, entry)
    }

    /// Removes `key`; returns its value.
    pub(crate) fn remove(&mut self, key: &str) -> Option<V> {
        let h = self.hash(key);
        self.table
            .find_entry(h, |s| s.hash == h && &*s.key == key)
            .ok()
            .map(|o| o.remove().0.value)
    }

    /// How many entries.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// How many entries the table holds without growing.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.table.capacity()
    }

    /// Every entry, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &V)> + '_ {
        self.table.iter().map(|s| (&*s.key, &s.value))
    }

    /// Every key, in no particular order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.table.iter().map(|s| &*s.key)
    }

    /// Shrinks the table to twice its length if it is less than a quarter
    /// full (see `compact`).
    pub(crate) fn shrink_if_sparse(&mut self) {
        let cap = self.table.capacity();
        if cap > crate::compact::MIN_CAPACITY && self.table.len() * 4 < cap {
            self.table.shrink_to(self.table.len() * 2, |s| s.hash);
        }
    }
}

impl<V> std::ops::Index<&str> for StrMap<V> {
    type Output = V;

    fn index(&self, key: &str) -> &V {
        self.get(key).expect("no such key")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_str_map_keeps_every_entry_through_growth_and_shrinking() {
        let mut m: StrMap<usize> = StrMap::default();
        for i in 0..10_000 {
            assert!(m.insert_new_shared(format!("/a/n-{i}").into(), i));
        }
        assert!(
            !m.insert_new_shared("/a/n-7".into(), 0),
            "present: nothing changes"
        );
        assert_eq!(m["/a/n-7"], 7);
        assert_eq!(m.insert("/a/n-7", 70), Some(7));
        *m.get_or_insert_with("/a/n-8", || 0) += 1;
        *m.get_or_insert_with("/b", || 41) += 1;
        assert_eq!((m["/a/n-8"], m["/b"]), (9, 42));
        assert_eq!(m.len(), 10_001);
        let peak = m.capacity();
        for i in 0..9_990 {
            assert_eq!(
                m.remove(&format!("/a/n-{i}")),
                Some(if i == 7 {
                    70
                } else if i == 8 {
                    9
                } else {
                    i
                })
            );
            m.shrink_if_sparse();
        }
        assert!(m.capacity() < peak / 100, "{} after {peak}", m.capacity());
        assert_eq!(m.len(), 11);
        for i in 9_990..10_000 {
            assert_eq!(m.get(&format!("/a/n-{i}")), Some(&i));
        }
        assert!(m.contains_key("/b") && !m.contains_key("/a/n-0"));
        let mut keys: Vec<&str> = m.keys().collect();
        keys.sort_unstable();
        assert_eq!(keys.first(), Some(&"/a/n-9990"));
        assert_eq!(m.iter().count(), 11);
    }
}
