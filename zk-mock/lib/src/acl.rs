//! ACL rules: `PrepRequestProcessor.fixupACL` and `ZooKeeperServer.checkACL`,
//! with the built-in `world`, `auth`, `digest` and `ip` schemes.

use std::net::IpAddr;

use base64::Engine;

use crate::proto::{Acl, ErrorCode, Id};

/// Validates and rewrites a requested ACL list as `fixupACL` does: duplicates
/// removed, `auth` entries replaced by the connection's authenticated ids,
/// unknown schemes and invalid ids rejected with INVALIDACL.
pub fn fixup(acl: &[Acl], auth_info: &[Id]) -> Result<Vec<Acl>, ErrorCode> {
    let mut unique: Vec<&Acl> = Vec::with_capacity(acl.len());
    for a in acl {
        if !unique.contains(&a) {
            unique.push(a);
        }
    }
    if unique.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut out = Vec::with_capacity(unique.len());
    for a in unique {
        match &*a.id.scheme {
            "world" if a.id.id == "anyone" => out.push(a.clone()),
            "auth" => {
                let mut any = false;
                // Only digest ids are "authenticated" among the built-in providers;
                // `ip` is not (IPAuthenticationProvider.isAuthenticated is false).
                for id in auth_info
                    .iter()
                    .filter(|id| is_authenticated_scheme(&id.scheme))
                {
                    any = true;
                    out.push(Acl {
                        perms: a.perms,
                        id: id.clone(),
                    });
                }
                if !any {
                    return Err(ErrorCode::InvalidAcl);
                }
            }
            "digest" if is_valid_digest_id(&a.id.id) => out.push(a.clone()),
            "ip" if is_valid_ip_id(&a.id.id) => out.push(a.clone()),
            _ => return Err(ErrorCode::InvalidAcl),
        }
    }
    Ok(out)
}

/// Whether `fixupACL` turns an authInfo id of this scheme into an `auth` ACL
/// entry: its provider must exist and be authenticated. Digest is; `ip` is
/// not, and `super` (the id the super digest adds) has no provider at all,
/// so a super user's `auth` ACL names only its digest id (checked against 3.8.0).
fn is_authenticated_scheme(scheme: &str) -> bool {
    scheme == "digest"
}

/// `DigestAuthenticationProvider.isValid`: `id.split(":").length == 2`, with
/// Java's `split` dropping trailing empty strings.
fn is_valid_digest_id(id: &str) -> bool {
    let mut parts: Vec<&str> = id.split(':').collect();
    while parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    parts.len() == 2
}

/// `IPAuthenticationProvider.isValid`: an address with optional `/bits` in range.
fn is_valid_ip_id(id: &str) -> bool {
    parse_ip_acl(id).is_some()
}

fn parse_ip_acl(id: &str) -> Option<(IpAddr, u32)> {
    let (addr, bits) = match id.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (id, None),
    };
    let addr: IpAddr = addr.parse().ok()?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let bits = match bits {
        None => max,
        Some(b) => {
            let b: i64 = b.parse().ok()?;
            if !(0..=max as i64).contains(&b) {
                return None;
            }
            b as u32
        }
    };
    Some((addr, bits))
}

fn ip_matches(acl_id: &str, client: &str) -> bool {
    let (Some((net, bits)), Ok(client)) = (parse_ip_acl(acl_id), client.parse::<IpAddr>()) else {
        return false;
    };
    let (a, b): (u128, u128) = match (net, client) {
        (IpAddr::V4(n), IpAddr::V4(c)) => (u32::from(n) as u128, u32::from(c) as u128),
        (IpAddr::V6(n), IpAddr::V6(c)) => (u128::from(n), u128::from(c)),
        _ => return false,
    };
    let width = if net.is_ipv4() { 32 } else { 128 };
    if bits == 0 {
        return true;
    }
    let shift = width - bits;
    (a >> shift) == (b >> shift)
}

/// `DigestAuthenticationProvider.generateDigest`: `"user:password"` becomes
/// `"user:" + base64(sha1("user:password"))`; the user is the text before the
/// first ':' (all of it if there is none).
///
/// ```
/// assert_eq!(zk_mock::acl::digest("super:test"), "super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
/// ```
pub fn digest(user_password: &str) -> String {
    let user = user_password.split(':').next().unwrap_or_default();
    let hash = sha1_smol::Sha1::from(user_password.as_bytes())
        .digest()
        .bytes();
    format!(
        "{user}:{}",
        base64::engine::general_purpose::STANDARD.encode(hash)
    )
}

use crate::tree::java_order::java_string_hash;

/// Puts a connection's auth ids in the order ZooKeeper iterates them: the
/// server keeps them in a `ConcurrentHashMap`-backed set
/// (`ServerCnxn.authInfo`), so whoAmI lists them, and an `auth` ACL names
/// them, in hash-bin order, insertion order within a bin. `ids` must
/// already be in that order but for the last one (each addition calls this).
pub(crate) fn java_set_order(ids: &mut [Id]) {
    // Jute's `Id.hashCode`, then `ConcurrentHashMap.spread`; the table has 16
    // bins until it holds 12 entries, then doubles (its resize keeps the
    // order within a bin).
    let bins = (ids.len() * 4 / 3 + 1).next_power_of_two().max(16);
    let bin = |id: &Id| {
        let h = 17i32
            .wrapping_mul(37)
            .wrapping_add(java_string_hash(&id.scheme))
            .wrapping_mul(37)
            .wrapping_add(java_string_hash(&id.id));
        let spread = (h ^ ((h as u32) >> 16) as i32) & 0x7fff_ffff;
        spread as usize & (bins - 1)
    };
    ids.sort_by_key(bin);
}

/// `checkACL`: whether a connection with `auth_info` holds `perm` on a node with `acl`.
pub fn check(acl: &[Acl], perm: i32, auth_info: &[Id]) -> Result<(), ErrorCode> {
    if acl.is_empty() || auth_info.iter().any(|id| id.scheme == "super") {
        return Ok(());
    }
    let granted = |a: &Acl| match &*a.id.scheme {
        "world" => a.id.id == "anyone",
        "digest" => auth_info
            .iter()
            .any(|id| id.scheme == "digest" && id.id == a.id.id),
        "ip" => auth_info
            .iter()
            .any(|id| id.scheme == "ip" && ip_matches(&a.id.id, &id.id)),
        _ => false,
    };
    if acl.iter().any(|a| a.perms & perm != 0 && granted(a)) {
        return Ok(());
    }
    Err(ErrorCode::NoAuth)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::perms;

    fn ip() -> Vec<Id> {
        vec![Id {
            scheme: "ip".into(),
            id: "127.0.0.1".into(),
        }]
    }

    #[test]
    fn fixup_rejects_what_zookeeper_rejects() {
        assert_eq!(fixup(&[], &ip()), Err(ErrorCode::InvalidAcl));
        assert_eq!(
            fixup(&[Acl::new(31, "world", "me")], &ip()),
            Err(ErrorCode::InvalidAcl)
        );
        assert_eq!(
            fixup(&[Acl::new(31, "auth", "")], &ip()),
            Err(ErrorCode::InvalidAcl),
            "ip is not authenticated"
        );
        assert_eq!(
            fixup(&[Acl::new(31, "digest", "user:")], &ip()),
            Err(ErrorCode::InvalidAcl)
        );
        assert_eq!(
            fixup(&[Acl::new(31, "digest", "a:b:c")], &ip()),
            Err(ErrorCode::InvalidAcl)
        );
        assert_eq!(
            fixup(&[Acl::new(31, "ip", "10.0.0.0/33")], &ip()),
            Err(ErrorCode::InvalidAcl)
        );
        assert_eq!(
            fixup(&[Acl::new(31, "super", "x")], &ip()),
            Err(ErrorCode::InvalidAcl)
        );
        assert!(fixup(&[Acl::new(31, "ip", "10.0.0.0/8")], &ip()).is_ok());
        assert!(fixup(&[Acl::new(31, "digest", "u:hash")], &ip()).is_ok());
    }

    #[test]
    fn auth_ids_come_in_java_hash_set_order() {
        let id = Id::new;
        // What a real 3.8.0 answers zkCli's whoami after `addauth digest alice:secret`.
        let mut ids = vec![
            id("ip", "127.0.0.1"),
            id("digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="),
        ];
        java_set_order(&mut ids);
        assert_eq!(ids[0].scheme, "digest");
    }

    #[test]
    fn fixup_dedupes_and_expands_auth() {
        let open = Acl::open_unsafe();
        assert_eq!(
            fixup(&[open[0].clone(), open[0].clone()], &ip()).unwrap(),
            open
        );
        let mut auth = ip();
        auth.push(Id {
            scheme: "digest".into(),
            id: "u:h".into(),
        });
        assert_eq!(
            fixup(&[Acl::new(5, "auth", "")], &auth).unwrap(),
            vec![Acl::new(5, "digest", "u:h")]
        );
    }

    #[test]
    fn check_follows_world_ip_and_digest() {
        assert!(check(&Acl::open_unsafe(), perms::WRITE, &ip()).is_ok());
        assert_eq!(
            check(&Acl::read_unsafe(), perms::WRITE, &ip()),
            Err(ErrorCode::NoAuth)
        );
        assert!(check(&[Acl::new(31, "ip", "127.0.0.0/8")], perms::READ, &ip()).is_ok());
        assert_eq!(
            check(&[Acl::new(31, "ip", "10.0.0.0/8")], perms::READ, &ip()),
            Err(ErrorCode::NoAuth)
        );
        assert_eq!(
            check(&[Acl::new(31, "digest", "u:h")], perms::READ, &ip()),
            Err(ErrorCode::NoAuth)
        );
        assert!(check(&[], perms::READ, &ip()).is_ok());
    }
}
