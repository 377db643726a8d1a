//! The iteration order of a Java `HashSet<String>`, which ZooKeeper lets
//! clients see: a node's children (getChildren), a session's ephemerals
//! (getEphemerals, and the order a closed session's ephemerals are deleted
//! and their watches fire in).
//!
//! A `HashMap` puts a key in bin `(h ^ h >>> 16) & (table - 1)` where `h` is
//! `String.hashCode`, appends it to that bin's list, and iterates bin by bin.
//! The table starts at the set's initial capacity, doubles when the set holds
//! more than ¾ of it, and never shrinks; a resize keeps the order within a
//! bin. (Bins of 8 or more keys in tables of 64 or more become trees; their
//! iteration order is kept too, so this holds for them as well.)

use crate::hash::StrMap;

/// Java's `String.hashCode` (over UTF-16 code units, wrapping).
pub(crate) fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

fn bin(name: &str, table: usize) -> usize {
    let h = java_string_hash(name);
    let spread = h ^ ((h as u32) >> 16) as i32;
    spread as u32 as usize & (table.max(1) - 1)
}

/// The bookkeeping that decides a `HashSet<String>`'s iteration order.
///
/// A member is kept as a key the tree already holds (a node's path), so
/// adding one copies nothing: a session's ephemerals are their paths, and a
/// node's children are their paths with the first `skip` bytes (the
/// parent's path and a `/`) left off. Lookups take the key whole.
#[derive(Debug, Clone)]
pub(crate) struct JavaHashSet {
    /// Each member's insertion number, by key.
    seq: StrMap<u64>,
    /// How many bytes of a key come before the member's name.
    skip: usize,
    next: u64,
    /// The table size (0 until the first insertion).
    table: usize,
    /// The table size the first insertion allocates.
    initial: usize,
}

impl JavaHashSet {
    /// A set created with `new HashSet<>(capacity)` (a power of two here;
    /// `new HashSet<>()` is 16).
    pub(crate) fn with_capacity(capacity: usize) -> JavaHashSet {
        JavaHashSet::of_names(capacity, 0)
    }

    /// [`with_capacity`](Self::with_capacity) for members whose names
    /// start `skip` bytes into their keys.
    pub(crate) fn of_names(capacity: usize, skip: usize) -> JavaHashSet {
        JavaHashSet {
            seq: StrMap::default(),
            skip,
            next: 0,
            table: 0,
            initial: capacity.next_power_of_two().max(1),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.seq.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.seq.len()
    }

    /// Whether the member keyed `key` is in.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.seq.contains_key(key)
    }

    /// The bytes a key has before its member's name.
    pub(crate) fn skip(&self) -> usize {
        self.skip
    }

    /// The names, in no particular order.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.seq.keys().map(|k| &k[self.skip..])
    }

    /// Any one key.
    pub(crate) fn any_key(&self) -> Option<&str> {
        self.seq.keys().next()
    }

    /// Adds the member keyed `key` (copied); false if it was there.
    #[cfg(test)]
    pub(crate) fn insert(&mut self, key: &str) -> bool {
        self.insert_shared(key.into())
    }

    /// Adds the member keyed `key`, keeping the key as given; false if it
    /// was there.
    pub(crate) fn insert_shared(&mut self, key: std::sync::Arc<str>) -> bool {
        debug_assert!(key.len() >= self.skip);
        if !self.seq.insert_new_shared(key, self.next) {
            return false;
        }
        self.next += 1;
        if self.table == 0 {
            self.table = self.initial;
        }
        while self.seq.len() > self.table * 3 / 4 {
            self.table *= 2;
        }
        true
    }

    /// Removes the member keyed `key`; false if it was not there.
    pub(crate) fn remove(&mut self, key: &str) -> bool {
        let removed = self.seq.remove(key).is_some();
        self.seq.shrink_if_sparse();
        removed
    }

    /// The capacity of the table holding the members (not Java's table).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.seq.capacity()
    }

    /// The members in iteration order.
    pub(crate) fn order(&self) -> Vec<&str> {
        let mut v: Vec<(usize, u64, &str)> = self
            .seq
            .iter()
            .map(|(k, s)| {
                let n = &k[self.skip..];
                (bin(n, self.table), *s, n)
            })
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, _, n)| n).collect()
    }

    /// The iteration order of `clone()` of this set (`HashMap.clone` sizes a
    /// fresh table for the current size, `tableSizeFor((int)(size / 0.75f +
    /// 1))`, and inserts the members in this set's order).
    pub(crate) fn clone_order(&self) -> Vec<&str> {
        let n = self.seq.len();
        if n == 0 {
            return Vec::new();
        }
        let t = (n as f32 / 0.75f32 + 1.0f32) as usize;
        let table = t.next_power_of_two();
        let mut v: Vec<(usize, usize, &str)> = self
            .order()
            .into_iter()
            .enumerate()
            .map(|(i, name)| (bin(name, table), i, name))
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, _, n)| n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_hash_is_javas() {
        assert_eq!(java_string_hash("hello"), 99_162_322);
        assert_eq!(java_string_hash("the quick brown fox"), 1_302_335_171);
        assert_eq!(java_string_hash(""), 0);
    }

    #[test]
    fn order_is_by_bin_then_insertion_and_the_table_grows_past_three_quarters() {
        let mut s = JavaHashSet::with_capacity(8);
        for name in ["zookeeper", "a", "b", "c", "d", "e"] {
            s.insert(name);
        }
        assert_eq!(s.table, 8);
        s.insert("f");
        assert_eq!(s.table, 16, "7 > 6 doubles the table");
        s.remove("a");
        s.remove("b");
        assert_eq!(s.table, 16, "never shrinks");
        let order = s.order();
        let bins: Vec<usize> = order.iter().map(|n| bin(n, 16)).collect();
        assert!(bins.windows(2).all(|w| w[0] <= w[1]), "{order:?}");
    }
}
