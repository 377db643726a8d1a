//! Tables give their memory back after a peak.
//!
//! A `HashMap` keeps its capacity when entries leave, so a server that once
//! held 10,000 sessions (or nodes, connections, watches, one node's
//! children) would keep tables sized for them for good. Every table that
//! shrinks with traffic calls [`Sparse::shrink_if_sparse`] after a removal:
//! once it is less than a quarter full it is rebuilt at twice its length.
//! Each rebuild costs O(len) and follows at least len removals (or len
//! insertions before the table can be rebuilt again), so removal stays O(1)
//! amortised and a table at steady size is never rebuilt.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

/// Tables at or below this capacity are left alone: rebuilding them would
/// save too little to be worth it.
pub(crate) const MIN_CAPACITY: usize = 64;

pub(crate) trait Sparse {
    /// Shrinks the table to twice its length if it is less than a quarter full.
    fn shrink_if_sparse(&mut self);
}

impl<K: Eq + Hash, V, S: BuildHasher> Sparse for HashMap<K, V, S> {
    fn shrink_if_sparse(&mut self) {
        let cap = self.capacity();
        if cap > MIN_CAPACITY && self.len() * 4 < cap {
            self.shrink_to(self.len() * 2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_emptied_after_a_peak_shrinks_and_a_steady_one_does_not() {
        let mut m: HashMap<u32, u64> = HashMap::new();
        for i in 0..100_000 {
            m.insert(i, 0);
        }
        let peak = m.capacity();
        for i in 0..100_000 {
            m.remove(&i);
            m.shrink_if_sparse();
            assert!(
                m.capacity() <= MIN_CAPACITY.max(8 * m.len()),
                "{} for {}",
                m.capacity(),
                m.len()
            );
        }
        assert!(m.capacity() <= MIN_CAPACITY && peak > 100_000);

        // Steady traffic at one size keeps a table of that size.
        for i in 0..1000 {
            m.insert(i, 0);
        }
        for i in 1000..50_000 {
            m.insert(i, 0);
            m.remove(&(i - 1000));
            m.shrink_if_sparse();
            assert!(
                (1000..=4 * 1001).contains(&m.capacity()),
                "{}",
                m.capacity()
            );
        }
    }
}
