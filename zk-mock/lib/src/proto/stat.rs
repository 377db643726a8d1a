//! `Stat`: 68 bytes, Jute order, **pzxid last**.

use crate::codec::record;

record! {
    /// The metadata of a znode as clients see it (`data.Stat`).
    pub struct Stat {
        pub czxid: i64,
        pub mzxid: i64,
        pub ctime: i64,
        pub mtime: i64,
        pub version: i32,
        /// The *reported* cversion (see `tree::Node::stat`).
        pub cversion: i32,
        pub aversion: i32,
        pub ephemeral_owner: i64,
        pub data_length: i32,
        pub num_children: i32,
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
