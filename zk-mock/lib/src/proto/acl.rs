//! `Id`, `ACL`, permissions and the predefined ACL lists (`ZooDefs.Ids`).

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

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
///
/// The strings are [`Cow`]s: the schemes and the ids that nearly every
/// request names (`world`, `anyone`, `auth`, `digest`, `ip`, `super`, the
/// empty string) decode to shared constants, with no allocation; any other
/// is owned. Build one with `.into()` from a `&'static str` or a `String`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Id {
    /// The scheme: `world`, `auth`, `digest`, `ip`, `super`.
    pub scheme: Cow<'static, str>,
    /// The identity within the scheme.
    pub id: Cow<'static, str>,
}

impl Id {
    /// An Id of `scheme` and `id`.
    pub fn new(scheme: &str, id: &str) -> Id {
        Id {
            scheme: shared(scheme),
            id: shared(id),
        }
    }
}

/// The strings an [`Id`] keeps as constants.
const SHARED: [&str; 9] = [
    "world", "anyone", "auth", "digest", "ip", "super", "x509", "sasl", "",
];

/// The [`SHARED`] constant whose bytes are `bytes`, if one is (compared as
/// bytes: a constant needs no UTF-8 check).
fn constant(bytes: &[u8]) -> Option<&'static str> {
    SHARED.iter().copied().find(|c| c.as_bytes() == bytes)
}

/// `s` as one of the [`SHARED`] constants, or owned.
fn shared(s: &str) -> Cow<'static, str> {
    constant(s.as_bytes()).map_or_else(|| Cow::Owned(s.to_owned()), Cow::Borrowed)
}

/// A `ustring` of an [`Id`]: one of the [`SHARED`] constants when its bytes
/// are one, else decoded as any other string is. Null decodes as empty.
fn id_string(input: &[u8]) -> crate::codec::Parse<'_, Cow<'static, str>> {
    let (rest, bytes) = crate::codec::jute::ubytes_opt(input)?;
    let s = match bytes {
        None => Cow::Borrowed(""),
        Some(b) => constant(b).map_or_else(
            || Cow::Owned(crate::codec::jute::utf8(b).into_owned()),
            Cow::Borrowed,
        ),
    };
    Ok((rest, s))
}

impl crate::codec::Record for Id {
    fn encode(&self, buf: &mut bytes::BytesMut) {
        crate::codec::jute::put_ustring(buf, &self.scheme);
        crate::codec::jute::put_ustring(buf, &self.id);
    }
    fn parse(input: &[u8]) -> crate::codec::Parse<'_, Self> {
        // world:anyone, the Id of nearly every ACL a client sends
        // (OPEN_ACL_UNSAFE, READ_ACL_UNSAFE), in one comparison.
        const WORLD_ANYONE: &[u8; 19] = b"\0\0\0\x05world\0\0\0\x06anyone";
        if let Some(rest) = input.strip_prefix(WORLD_ANYONE) {
            let id = Id {
                scheme: Cow::Borrowed("world"),
                id: Cow::Borrowed("anyone"),
            };
            return Ok((rest, id));
        }
        let (input, scheme) = id_string(input)?;
        let (input, id) = id_string(input)?;
        Ok((input, Id { scheme, id }))
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
            id: Id::new(scheme, id),
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

    /// `OPEN_ACL_UNSAFE` as one list the whole process shares: what a create
    /// that asks for it decodes to, and what the tree keeps on every node
    /// created with it, with no allocation for either.
    pub fn open_shared() -> Arc<[Acl]> {
        static OPEN: LazyLock<Arc<[Acl]>> = LazyLock::new(|| Acl::open_unsafe().into());
        OPEN.clone()
    }
}

/// A node's ACL list in a request (a create's): shared, as the tree keeps
/// it. `OPEN_ACL_UNSAFE`, which nearly every create names, decodes to
/// [`Acl::open_shared`] in one comparison, with no allocation; any other list
/// decodes as a `vector` does.
impl crate::codec::Field for Arc<[Acl]> {
    fn put(&self, buf: &mut bytes::BytesMut) {
        crate::codec::put_vector(buf, self)
    }
    fn take(input: &[u8]) -> crate::codec::Parse<'_, Self> {
        const OPEN_ACL_UNSAFE: &[u8; 27] = b"\0\0\0\x01\0\0\0\x1f\0\0\0\x05world\0\0\0\x06anyone";
        if let Some(rest) = input.strip_prefix(OPEN_ACL_UNSAFE) {
            return Ok((rest, Acl::open_shared()));
        }
        let (rest, list) = <Vec<Acl> as crate::codec::Field>::take(input)?;
        Ok((rest, list.into()))
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
        assert_round_trip(&Id::new("world", "anyone"));
    }

    #[test]
    fn open_acl_unsafe_decodes_to_the_shared_list_and_any_other_as_sent() {
        use crate::codec::Field;
        let shared = Acl::open_shared();
        let encode = |list: &[Acl]| {
            let mut b = bytes::BytesMut::new();
            crate::codec::put_vector(&mut b, list);
            b.extend_from_slice(b"tail");
            b
        };
        let wire = encode(&Acl::open_unsafe());
        let (rest, got) = <Arc<[Acl]>>::take(&wire).expect("decodes");
        assert_eq!(rest, b"tail");
        assert!(Arc::ptr_eq(&got, &shared), "the shared list, not a copy");
        for list in [
            Acl::read_unsafe(),
            vec![Acl::new(31, "world", "anyone"); 2],
            vec![Acl::new(31, "world", "anyon")],
            Vec::new(),
        ] {
            let wire = encode(&list);
            let (rest, got) = <Arc<[Acl]>>::take(&wire).expect("decodes");
            assert_eq!((rest, &got[..]), (&b"tail"[..], &list[..]));
            assert!(!Arc::ptr_eq(&got, &shared));
        }
    }

    #[test]
    fn an_id_decodes_its_constants_shared_and_anything_else_as_java_would() {
        let decode = |scheme: Option<&[u8]>, id: Option<&[u8]>| {
            let mut b = bytes::BytesMut::new();
            crate::codec::jute::put_buffer(&mut b, scheme);
            crate::codec::jute::put_buffer(&mut b, id);
            <Id as crate::codec::Record>::decode(&b).unwrap()
        };
        let open = decode(Some(b"world"), Some(b"anyone"));
        assert!(matches!(
            (&open.scheme, &open.id),
            (Cow::Borrowed("world"), Cow::Borrowed("anyone"))
        ));
        let digest = decode(Some(b"digest"), Some(b"u:h="));
        assert!(matches!(digest.scheme, Cow::Borrowed("digest")));
        assert!(matches!(&digest.id, Cow::Owned(s) if s == "u:h="));
        // Invalid UTF-8 takes U+FFFD, as `new String(bytes, UTF_8)` gives it;
        // null reads as empty.
        let odd = decode(Some(&[b'i', 0xff]), None);
        assert_eq!((&*odd.scheme, &*odd.id), ("i\u{fffd}", ""));
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
