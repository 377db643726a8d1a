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

/// `Id {ustring scheme; ustring id}`.
///
/// Either string may arrive null (length −1): kazoo writes every empty
/// string that way, e.g. the `auth` scheme's id in `CREATOR_ALL_ACL`. Java
/// reads null and `fixupACL` ignores the id of `auth` entries (and rejects a
/// null scheme as InvalidACL), so null decodes as the empty string here
/// rather than failing the request as malformed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Id {
    /// The scheme: `world`, `auth`, `digest`, `ip`, `super`.
    pub scheme: String,
    /// The identity within the scheme.
    pub id: String,
}

impl crate::codec::Record for Id {
    fn encode(&self, buf: &mut bytes::BytesMut) {
        crate::codec::Field::put(&self.scheme, buf);
        crate::codec::Field::put(&self.id, buf);
    }
    fn parse(input: &[u8]) -> crate::codec::Parse<'_, Self> {
        let (input, scheme) = crate::codec::jute::ustring_opt(input)?;
        let (input, id) = crate::codec::jute::ustring_opt(input)?;
        Ok((
            input,
            Id {
                scheme: scheme.unwrap_or_default(),
                id: id.unwrap_or_default(),
            },
        ))
    }
}

impl crate::codec::Field for Id {
    fn put(&self, buf: &mut bytes::BytesMut) {
        crate::codec::Record::encode(self, buf)
    }
    fn take(input: &[u8]) -> crate::codec::Parse<'_, Self> {
        <Self as crate::codec::Record>::parse(input)
    }
}

record! {
    /// `ACL {int perms; Id id}`.
    pub struct Acl {
        /// The permissions granted, an OR of [`perms`] bits.
        pub perms: i32,
        /// Who they are granted to.
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

    #[test]
    fn a_null_id_reads_as_empty_as_kazoo_sends_it() {
        use crate::codec::Record;
        // kazoo's CREATOR_ALL_ACL: perms 31, Id("auth", "") with "" written as -1.
        let mut wire = vec![0, 0, 0, 31, 0, 0, 0, 4];
        wire.extend_from_slice(b"auth");
        wire.extend_from_slice(&(-1i32).to_be_bytes());
        let (rest, acl) = Acl::parse(&wire).expect("a null id is accepted");
        assert!(rest.is_empty());
        assert_eq!(acl, Acl::new(31, "auth", ""));
    }
}
