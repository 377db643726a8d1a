//! `Id`, `ACL`, permissions and the predefined ACL lists (`ZooDefs.Ids`).

use crate::codec::record;

/// `ZooDefs.Perms`.
pub mod perms {
    /// Read data and children.
    pub const READ: i32 = 1;
    /// Set data.
    pub const WRITE: i32 = 2;
    /// Create children.
    pub const CREATE: i32 = 4;
    /// Delete children.
    pub const DELETE: i32 = 8;
    /// Set the ACL.
    pub const ADMIN: i32 = 16;
    /// All of the above.
    pub const ALL: i32 = 31;
}

record! {
    /// `Id {ustring scheme; ustring id}`.
    pub struct Id {
        pub scheme: String,
        pub id: String,
    }
}

record! {
    /// `ACL {int perms; Id id}`.
    pub struct Acl {
        pub perms: i32,
        pub id: Id,
    }
}

impl Acl {
    /// An ACL entry.
    pub fn new(perms: i32, scheme: &str, id: &str) -> Acl {
        Acl {
            perms,
            id: Id {
                scheme: scheme.into(),
                id: id.into(),
            },
        }
    }

    /// `OPEN_ACL_UNSAFE`: world:anyone with every permission.
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl::new(perms::ALL, "world", "anyone")]
    }

    /// `READ_ACL_UNSAFE`: world:anyone, read only.
    pub fn read_unsafe() -> Vec<Acl> {
        vec![Acl::new(perms::READ, "world", "anyone")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::assert_round_trip;

    #[test]
    fn acl_round_trips() {
        assert_round_trip(&Acl::new(31, "world", "anyone"));
        assert_round_trip(&Id {
            scheme: "digest".into(),
            id: "u:h=".into(),
        });
    }
}
