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
//! The index keeps each path's hash, its key (the path, shared with the
//! records and events) and the place: 32 bytes a slot, as with a pointer
//! to a boxed node. It keeps no node inline: a table that doubles would
//! then write 128 bytes a node, not 32, and a large tree's writes paid for
//! that in page faults (0.22 per create in `ops_cpu` with the nodes
//! inline, 0.14 boxed).

use std::sync::Arc;

use super::Node;
use crate::hash::StrMap;

/// Every node by path.
#[derive(Default)]
pub(crate) struct NodeTable {
    /// Each path's place in `places`.
    index: StrMap<u32>,
    /// The nodes; `None` is a free place.
    places: Vec<Option<Node>>,
    /// The free places, the last freed first (its memory is the likeliest
    /// to be in the cache).
    free: Vec<u32>,
}

impl NodeTable {
    /// The node at `path`.
    #[inline]
    pub(crate) fn get(&self, path: &str) -> Option<&Node> {
        let at = *self.index.get(path)?;
        self.places[at as usize].as_ref()
    }

    /// The node at `path`, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, path: &str) -> Option<&mut Node> {
        let at = *self.index.get(path)?;
        self.places[at as usize].as_mut()
    }

    /// The place of the node at `path`, for [`at`](Self::at) and
    /// [`at_mut`](Self::at_mut): a node looked up again by its place is not
    /// hashed again. A place is good only until the next removal of any
    /// node, which may move every node (see `shrink_if_sparse`).
    #[inline]
    pub(crate) fn place(&self, path: &str) -> Option<u32> {
        self.index.get(path).copied()
    }

    /// The node at a [`place`](Self::place).
    #[inline]
    pub(crate) fn at(&self, place: u32) -> &Node {
        self.places[place as usize]
            .as_ref()
            .expect("a place given out holds a node")
    }

    /// The node at a [`place`](Self::place), to change.
    #[inline]
    pub(crate) fn at_mut(&mut self, place: u32) -> &mut Node {
        self.places[place as usize]
            .as_mut()
            .expect("a place given out holds a node")
    }

    /// `path`'s hash, for [`contains_hashed`](Self::contains_hashed) and
    /// [`insert_shared_hashed`](Self::insert_shared_hashed).
    #[inline]
    pub(crate) fn hash(&self, path: &str) -> u64 {
        self.index.hash(path)
    }

    /// The node at `path`, whose [`hash`](Self::hash) is `hash`.
    #[inline]
    pub(crate) fn get_hashed(&self, hash: u64, path: &str) -> Option<&Node> {
        let at = *self.index.get_hashed(hash, path)?;
        self.places[at as usize].as_ref()
    }

    /// Whether there is a node at `path`, whose [`hash`](Self::hash) is `hash`.
    #[inline]
    pub(crate) fn contains_hashed(&self, hash: u64, path: &str) -> bool {
        self.index.get_hashed(hash, path).is_some()
    }

    /// The table's own copy of `path`.
    #[inline]
    pub(crate) fn get_key(&self, path: &str) -> Option<&Arc<str>> {
        self.index.get_key(path)
    }

    /// The node at `path`, to change, with the path as the table keeps it.
    pub(crate) fn get_key_mut(&mut self, path: &str) -> Option<(&Arc<str>, &mut Node)> {
        let (key, &mut at) = self.index.get_key_mut(path)?;
        let node = self.places[at as usize].as_mut()?;
        Some((key, node))
    }

    /// Whether there is a node at `path`.
    pub(crate) fn contains_key(&self, path: &str) -> bool {
        self.index.contains_key(path)
    }

    /// Puts `node` at `path`; returns the node it replaces. A new path is
    /// kept as given (shared, not copied).
    pub(crate) fn insert_shared(&mut self, path: Arc<str>, node: Node) -> Option<Node> {
        let hash = self.hash(&path);
        self.insert_shared_hashed(hash, path, node)
    }

    /// [`insert_shared`](Self::insert_shared) with `path`'s [`hash`](Self::hash) given.
    pub(crate) fn insert_shared_hashed(
        &mut self,
        hash: u64,
        path: Arc<str>,
        node: Node,
    ) -> Option<Node> {
        let (places, free) = (&mut self.places, &mut self.free);
        let mut node = Some(node);
        let (&mut at, new) =
            self.index
                .get_or_insert_shared_hashed(hash, path, || match free.pop() {
                    Some(at) => {
                        places[at as usize] = node.take();
                        at
                    }
                    None => {
                        let at = u32::try_from(places.len()).expect("fewer than 2^32 nodes");
                        places.push(node.take());
                        at
                    }
                });
        if new {
            None
        } else {
            std::mem::replace(&mut places[at as usize], node)
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
        let (key, at) = self.index.remove_entry_hashed(hash, path)?;
        let node = self.places[at as usize]
            .take()
            .expect("an indexed place holds a node");
        self.free.push(at);
        self.shrink_if_sparse();
        Some((key, node))
    }

    /// How many nodes.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// Every node by path, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, &Node)> + '_ {
        self.index.iter().map(|(path, &at)| {
            let node = self.places[at as usize]
                .as_ref()
                .expect("an indexed place holds a node");
            (path, node)
        })
    }

    /// Every path, in no particular order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> + '_ {
        self.index.keys()
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
    /// back; the index shrinks by its own rule. Each move of n nodes
    /// follows at least n deletes, so a delete stays O(1) amortised.
    fn shrink_if_sparse(&mut self) {
        self.index.shrink_if_sparse();
        let live = self.index.len();
        if self.places.len() <= crate::compact::MIN_CAPACITY || live * 4 >= self.places.len() {
            return;
        }
        let mut places = Vec::with_capacity(live * 2);
        for at in self.index.values_mut() {
            let node = self.places[*at as usize].take();
            *at = places.len() as u32;
            places.push(node);
        }
        self.places = places;
        self.free = Vec::new();
    }
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
