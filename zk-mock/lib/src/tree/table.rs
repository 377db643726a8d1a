//! The tree's nodes by path: an index from each path to a place in one
//! array of nodes.
//!
//! A node lives in a place of [`NodeTable`]'s array, not in an allocation
//! of its own. A create takes a free place, or one at the array's end; a
//! delete frees its place for the next create. The array grows as a
//! `Vec` does: a large one is moved by remapping its pages (glibc's
//! `realloc` of an `mmap`ed block), never copied node by node, and a page
//! is touched only when a node first lands in it. A node in an allocation
//! of its own cost each create a call into the allocator's slow path (a
//! node outlives every allocation made after it, so none comes back from
//! its caches) and the arena's growth a page at a time, each page with an
//! `mprotect`.
//!
//! The index keeps, for each path, the upper half of its hash and its
//! place: 8 bytes a slot. The path itself is kept in the place, beside
//! its node (shared with the records and events), where a lookup that
//! finds a slot of the same hash compares it. The index of a large tree
//! is the table every create inserts into at random and every doubling
//! rewrites whole: with the path's hash and the path in each slot, 32
//! bytes, it was the largest share of a growing tree's cache misses
//! (2.9 writes missing a 4 MiB last level per create for the inserts and
//! 2.5 for the doublings, in a callgrind cache simulation of `ops_cpu
//! --ops create --sessions 64`); at 8 bytes a tree of 200,000 nodes keeps
//! its index in 2 MiB. It keeps no node inline: a table that doubles would
//! then write every node again, and a large tree's writes paid for that in
//! page faults (0.22 per create in `ops_cpu` with the nodes inline, 0.14
//! apart).

use std::hash::BuildHasher;
use std::sync::Arc;

use hashbrown::hash_table::{Entry, HashTable};

use super::Node;

/// Every node by path.
#[derive(Default)]
pub(crate) struct NodeTable {
    /// Each path's place in `places`.
    index: HashTable<Slot>,
    hasher: foldhash::fast::RandomState,
    /// The nodes with their paths; `None` is a free place.
    places: Vec<Option<Placed>>,
    /// The free places, the last freed first (its memory is the likeliest
    /// to be in the cache).
    free: Vec<u32>,
}

/// A slot of the index: the upper 32 bits of a path's hash, and the place
/// of its node.
#[derive(Clone, Copy)]
struct Slot {
    hash: u32,
    at: u32,
}

impl Slot {
    /// The hash the index files this slot under (see [`NodeTable::hash`]).
    fn table_hash(self) -> u64 {
        spread(self.hash)
    }
}

/// A node and its path, the one copy of it that the tree shares.
struct Placed {
    path: Arc<str>,
    node: Node,
}

/// The 64-bit hash the index files a path under, from the 32 bits a slot
/// keeps: the same bits twice, so the index's bucket (its low bits) and
/// its tag (its top seven) both come from them.
fn spread(h: u32) -> u64 {
    (u64::from(h) << 32) | u64::from(h)
}

/// The 32 bits of a path's 64-bit hash that a slot keeps.
fn fold(hash: u64) -> u32 {
    (hash >> 32) as u32
}

impl NodeTable {
    /// The slot of `path`, whose [`hash`](Self::hash) is `hash`.
    #[inline]
    fn find(&self, hash: u64, path: &str) -> Option<Slot> {
        let (h, places) = (fold(hash), &self.places);
        self.index
            .find(hash, |s| s.hash == h && *placed(places, s.at).path == *path)
            .copied()
    }

    /// The node at `path`.
    #[inline]
    pub(crate) fn get(&self, path: &str) -> Option<&Node> {
        self.get_hashed(self.hash(path), path)
    }

    /// The node at `path`, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, path: &str) -> Option<&mut Node> {
        let at = self.place(path)?;
        Some(self.at_mut(at))
    }

    /// The place of the node at `path`, for [`at`](Self::at) and
    /// [`at_mut`](Self::at_mut): a node looked up again by its place is not
    /// hashed again. A place is good only until the next removal of any
    /// node, which may move every node (see `shrink_if_sparse`).
    #[inline]
    pub(crate) fn place(&self, path: &str) -> Option<u32> {
        self.find(self.hash(path), path).map(|s| s.at)
    }

    /// The node at a [`place`](Self::place).
    #[inline]
    pub(crate) fn at(&self, place: u32) -> &Node {
        &placed(&self.places, place).node
    }

    /// The node at a [`place`](Self::place), to change.
    #[inline]
    pub(crate) fn at_mut(&mut self, place: u32) -> &mut Node {
        &mut placed_mut(&mut self.places, place).node
    }

    /// `path`'s hash, for [`contains_hashed`](Self::contains_hashed) and
    /// [`insert_shared_hashed`](Self::insert_shared_hashed).
    #[inline]
    pub(crate) fn hash(&self, path: &str) -> u64 {
        spread(fold(self.hasher.hash_one(path)))
    }

    /// The node at `path`, whose [`hash`](Self::hash) is `hash`.
    #[inline]
    pub(crate) fn get_hashed(&self, hash: u64, path: &str) -> Option<&Node> {
        let s = self.find(hash, path)?;
        Some(self.at(s.at))
    }

    /// Whether there is a node at `path`, whose [`hash`](Self::hash) is `hash`.
    #[inline]
    pub(crate) fn contains_hashed(&self, hash: u64, path: &str) -> bool {
        self.find(hash, path).is_some()
    }

    /// The table's own copy of `path`.
    #[inline]
    pub(crate) fn get_key(&self, path: &str) -> Option<&Arc<str>> {
        let s = self.find(self.hash(path), path)?;
        Some(&placed(&self.places, s.at).path)
    }

    /// The node at a [`place`](Self::place), to change, with the path as
    /// the table keeps it.
    #[inline]
    pub(crate) fn at_key_mut(&mut self, place: u32) -> (&Arc<str>, &mut Node) {
        let p = placed_mut(&mut self.places, place);
        (&p.path, &mut p.node)
    }

    /// Whether there is a node at `path`.
    pub(crate) fn contains_key(&self, path: &str) -> bool {
        self.place(path).is_some()
    }

    /// Puts `node` at `path`; returns the node it replaces. A new path is
    /// kept as given (shared, not copied).
    pub(crate) fn insert_shared(&mut self, path: Arc<str>, node: Node) -> Option<Node> {
        let hash = self.hash(&path);
        self.insert_shared_hashed(hash, path, node)
            .map(|(_, old)| old)
    }

    /// [`insert_shared`](Self::insert_shared) with `path`'s [`hash`](Self::hash) given.
    /// A new path is moved into the table; over an existing one the table
    /// keeps its own copy and gives `path` back with the node it replaces.
    pub(crate) fn insert_shared_hashed(
        &mut self,
        hash: u64,
        path: Arc<str>,
        node: Node,
    ) -> Option<(Arc<str>, Node)> {
        debug_assert_eq!(hash, self.hash(&path));
        let (h, places) = (fold(hash), &mut self.places);
        let entry = self.index.entry(
            hash,
            |s| s.hash == h && *placed(places, s.at).path == *path,
            |s| s.table_hash(),
        );
        match entry {
            Entry::Occupied(o) => {
                let old = placed_mut(places, o.get().at);
                Some((path, std::mem::replace(&mut old.node, node)))
            }
            Entry::Vacant(v) => {
                let placed = Some(Placed { path, node });
                let at = match self.free.pop() {
                    Some(at) => {
                        places[at as usize] = placed;
                        at
                    }
                    None => {
                        let at = u32::try_from(places.len()).expect("fewer than 2^32 nodes");
                        places.push(placed);
                        at
                    }
                };
                v.insert(Slot { hash: h, at });
                None
            }
        }
    }

    /// [`insert_shared`](Self::insert_shared), copying `path`.
    pub(crate) fn insert(&mut self, path: &str, node: Node) -> Option<Node> {
        self.insert_shared(path.into(), node)
    }

    /// [`remove_entry_hashed`](Self::remove_entry_hashed), hashing `path`.
    #[cfg(test)]
    pub(crate) fn remove_entry(&mut self, path: &str) -> Option<(Arc<str>, Node)> {
        let hash = self.hash(path);
        self.remove_entry_hashed(hash, path)
    }

    /// Removes the node at `path`, whose [`hash`](Self::hash) is `hash`;
    /// returns its path as the table kept it, and the node. Gives memory
    /// back after a peak (see `compact`).
    pub(crate) fn remove_entry_hashed(
        &mut self,
        hash: u64,
        path: &str,
    ) -> Option<(Arc<str>, Node)> {
        let (h, places) = (fold(hash), &self.places);
        let slot = self
            .index
            .find_entry(hash, |s| s.hash == h && *placed(places, s.at).path == *path)
            .ok()?
            .remove()
            .0;
        let Placed { path, node } = self.places[slot.at as usize]
            .take()
            .expect("an indexed place holds a node");
        self.free.push(slot.at);
        self.shrink_if_sparse();
        Some((path, node))
    }

    /// How many nodes.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// Every node by path, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Node)> + '_ {
        self.index.iter().map(|s| {
            let p = placed(&self.places, s.at);
            (&*p.path, &p.node)
        })
    }

    /// Every path, in no particular order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.iter().map(|(path, _)| path)
    }

    /// How many nodes the index holds without growing.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.index.capacity()
    }

    /// How many places the array has, used or free.
    #[cfg(test)]
    pub(crate) fn places(&self) -> usize {
        self.places.capacity()
    }

    /// Once fewer than a quarter of the places hold a node, moves the nodes
    /// to the front of an array twice their number and gives the rest
    /// back; the index shrinks by its own rule (a quarter full, to twice
    /// its length, as `compact`'s tables do). Each move of n nodes follows
    /// at least n deletes, so a delete stays O(1) amortised.
    fn shrink_if_sparse(&mut self) {
        let cap = self.index.capacity();
        if cap > crate::compact::MIN_CAPACITY && self.index.len() * 4 < cap {
            self.index
                .shrink_to(self.index.len() * 2, |s| s.table_hash());
        }
        let live = self.index.len();
        if self.places.len() <= crate::compact::MIN_CAPACITY || live * 4 >= self.places.len() {
            return;
        }
        let mut places = Vec::with_capacity(live * 2);
        for s in self.index.iter_mut() {
            let p = self.places[s.at as usize].take();
            s.at = places.len() as u32;
            places.push(p);
        }
        self.places = places;
        self.free = Vec::new();
    }
}

/// What the place `at` holds, which an index slot or a place given out
/// names.
#[inline]
fn placed(places: &[Option<Placed>], at: u32) -> &Placed {
    places[at as usize]
        .as_ref()
        .expect("an indexed place holds a node")
}

/// [`placed`], to change.
#[inline]
fn placed_mut(places: &mut [Option<Placed>], at: u32) -> &mut Placed {
    places[at as usize]
        .as_mut()
        .expect("an indexed place holds a node")
}

impl std::fmt::Debug for NodeTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl std::ops::Index<&str> for NodeTable {
    type Output = Node;

    fn index(&self, path: &str) -> &Node {
        self.get(path).expect("no such node")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Acl;

    fn node(version: i32) -> Node {
        let mut n = Node::special(Acl::open_unsafe().into());
        n.version = version;
        n
    }

    #[test]
    fn paths_whose_kept_hash_bits_are_equal_are_told_apart_by_the_path() {
        // A slot keeps 32 bits of the hash: among 400,000 paths some pairs
        // share them (about 18 expected; none at all about once in 10^8).
        let mut t = NodeTable::default();
        let mut seen = std::collections::HashMap::new();
        let (a, b) = (0..400_000)
            .map(|i| format!("/n{i}"))
            .find_map(|p| {
                let h = t.hash(&p);
                seen.insert(h, p.clone()).map(|q| (q, p))
            })
            .expect("a pair of paths with the same kept bits");
        assert_ne!(a, b);
        assert_eq!(t.hash(&a), t.hash(&b));
        assert!(t.insert(&a, node(1)).is_none());
        assert!(t.get(&b).is_none() && !t.contains_key(&b), "{b} is not {a}");
        assert!(t.insert(&b, node(2)).is_none(), "a new node, not {a}'s");
        assert_eq!((t[&*a].version, t[&*b].version), (1, 2));
        assert_eq!(t.get_key(&b).map(|k| &**k), Some(&*b));
        assert_eq!(
            t.remove_entry(&a).map(|(k, n)| (k.to_string(), n.version)),
            Some((a.clone(), 1))
        );
        assert!(t.get(&a).is_none());
        assert_eq!(t[&*b].version, 2);
    }

    #[test]
    fn places_are_reused_and_given_back_after_a_peak() {
        let mut t = NodeTable::default();
        for i in 0..10_000 {
            assert!(t.insert(&format!("/n{i}"), node(i)).is_none());
        }
        assert_eq!(t.insert("/n7", node(70)).map(|n| n.version), Some(7));
        assert_eq!(t.len(), 10_000);
        let (key, n) = t.remove_entry("/n3").unwrap();
        assert_eq!((&*key, n.version), ("/n3", 3));
        // The freed place takes the next node: the array does not grow.
        let places = t.places();
        t.insert("/again", node(-1));
        assert_eq!(t.places(), places);
        assert_eq!(t["/again"].version, -1);
        for i in (0..10_000).filter(|i| *i != 3) {
            t.remove_entry(&format!("/n{i}")).unwrap();
            if i % 97 == 0 {
                // Every node left is still where its path says.
                for (p, n) in t.iter() {
                    if let Some(k) = p.strip_prefix("/n") {
                        let k: i32 = k.parse().unwrap();
                        assert_eq!(n.version, if k == 7 { 70 } else { k });
                    }
                }
            }
        }
        assert_eq!(t.len(), 1);
        assert!(
            t.places() <= crate::compact::MIN_CAPACITY * 2,
            "{}",
            t.places()
        );
        assert_eq!(t.get("/again").map(|n| n.version), Some(-1));
        assert!(t.get("/n3").is_none() && !t.contains_key("/n9999"));
        assert_eq!(t.keys().collect::<Vec<_>>(), ["/again"]);
    }
}
