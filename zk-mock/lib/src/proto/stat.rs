//! `Stat`: 68 bytes, Jute order, **pzxid last**.

use crate::codec::record;

record! {
    /// The metadata of a znode as clients see it (`data.Stat`).
    pub struct Stat (STAT_LEN) {
        /// The zxid of the transaction that created the node.
        pub czxid: i64,
        /// The zxid of the last change to its data.
        pub mzxid: i64,
        /// Creation time, ms since the epoch.
        pub ctime: i64,
        /// Time of the last data change, ms since the epoch.
        pub mtime: i64,
        /// The number of changes to its data.
        pub version: i32,
        /// The number of changes to its children, as reported: see
        /// [`Node::stat`](crate::tree::Node::stat).
        pub cversion: i32,
        /// The number of changes to its ACL.
        pub aversion: i32,
        /// The owning session's id for an ephemeral node, else 0.
        pub ephemeral_owner: i64,
        /// The length of its data in bytes.
        pub data_length: i32,
        /// Its number of children.
        pub num_children: i32,
        /// The zxid of the last change to its children.
        pub pzxid: i64,
    }
}

/// Size of an encoded [`Stat`] (`DataTree.STAT_OVERHEAD_BYTES`).
pub const STAT_LEN: usize = 68;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{assert_round_trip, Record};

    #[test]
    fn stat_is_68_bytes_with_pzxid_last() {
        let s = Stat {
            czxid: 1,
            pzxid: 0x0102030405060708,
            ..Default::default()
        };
        let b = s.to_bytes();
        assert_eq!(b.len(), STAT_LEN);
        assert_eq!(&b[60..], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_round_trip(&s);
    }
}
