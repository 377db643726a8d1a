//! Path rules (`org.apache.zookeeper.common.PathUtils`) and parent/child splitting.

/// `PathUtils.validatePath`: whether ZooKeeper accepts `path` as a node path.
///
/// Rules are checked per UTF-16 code unit, so every character outside the
/// Basic Multilingual Plane (a surrogate pair in Java) is rejected, as are
/// control characters, the private-use area and U+FFF0..U+FFFF (which includes
/// the U+FFFD that invalid UTF-8 decodes to).
pub fn is_valid(path: &str) -> bool {
    let b = path.as_bytes();
    if b.first() != Some(&b'/') {
        return false;
    }
    if b.len() == 1 {
        return true;
    }
    if b[b.len() - 1] == b'/' {
        return false;
    }
    // One pass over the bytes: the segments, and the ASCII control
    // characters (one table lookup per byte); a path with other characters
    // is checked char by char.
    let segment_ok = |s: &[u8]| !(s.is_empty() || s == b"." || s == b"..");
    let mut start = 1;
    let mut ascii = true;
    for (i, &c) in b.iter().enumerate().skip(1) {
        match BYTE_CLASS[usize::from(c)] {
            PLAIN => {}
            SLASH => {
                if !segment_ok(&b[start..i]) {
                    return false;
                }
                start = i + 1;
            }
            CONTROL => return false,
            _ => ascii = false,
        }
    }
    segment_ok(&b[start..]) && (ascii || !path.chars().any(is_invalid_char))
}

const PLAIN: u8 = 0;
const SLASH: u8 = 1;
const CONTROL: u8 = 2;
const NON_ASCII: u8 = 3;

/// What [`is_valid`] makes of each byte of a path.
const BYTE_CLASS: [u8; 256] = {
    let mut t = [PLAIN; 256];
    let mut c = 0;
    while c < 256 {
        t[c] = if c == b'/' as usize {
            SLASH
        } else if c < 0x20 || c == 0x7f {
            CONTROL
        } else if c >= 0x80 {
            NON_ASCII
        } else {
            PLAIN
        };
        c += 1;
    }
    t
};

fn is_invalid_char(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{e000}'..='\u{f8ff}'
        | '\u{fff0}'..='\u{ffff}'
    ) || (c as u32) > 0xffff
}

/// Splits `path` at its last '/': the parent as ZooKeeper looks it up (`""` is
/// the root's alias) and the child name. `None` if there is no '/'.
pub fn split(path: &str) -> Option<(&str, &str)> {
    // From the end, byte by byte: a path's last name is short (a search
    // that goes a word at a time costs more to set up than this takes), and
    // '/' is ASCII, so `i` is a char boundary.
    let i = path.bytes().rposition(|c| c == b'/')?;
    Some((&path[..i], &path[i + 1..]))
}

/// The path of `parent`'s child `name`.
pub fn child(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// The parent's path as reported in events: the root's parent `""` is `"/"`.
pub fn parent_for_event(path: &str) -> &str {
    match split(path) {
        Some(("", _)) | None => "/",
        Some((p, _)) => p,
    }
}

/// The four nodes of a fresh server that can never be deleted.
pub fn is_special(path: &str) -> bool {
    matches!(
        path,
        "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config"
    )
}

/// Formats a sequential suffix as Java's `String.format("%010d", n)` does,
/// including the negative form after the counter overflows (`-000000001`).
pub fn sequence_suffix(n: i32) -> String {
    format!("{n:010}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_like_path_utils() {
        for ok in [
            "/",
            "/a",
            "/a/b",
            "/a.b",
            "/...",
            "/a/.b",
            "/zookeeper",
            "/é",
            "/a b",
        ] {
            assert!(is_valid(ok), "{ok:?} should be valid");
        }
        for bad in [
            "",
            "a",
            "/a/",
            "//",
            "/a//b",
            "/.",
            "/..",
            "/a/./b",
            "/a/../b",
            "/a\u{0}",
            "/\u{1}",
            "/\u{85}",
            "/\u{e000}",
            "/\u{fffd}",
            "/😀",
        ] {
            assert!(!is_valid(bad), "{bad:?} should be invalid");
        }
    }

    /// The rule as written first: segment by segment, then char by char.
    fn is_valid_by_segments(path: &str) -> bool {
        if !path.starts_with('/') {
            return false;
        }
        if path.len() == 1 {
            return true;
        }
        if path.ends_with('/') {
            return false;
        }
        for segment in path[1..].split('/') {
            if segment.is_empty() || segment == "." || segment == ".." {
                return false;
            }
        }
        !path.chars().any(is_invalid_char)
    }

    proptest::proptest! {
        #[test]
        fn the_one_pass_check_agrees_with_the_rule(
            rooted in proptest::bool::ANY,
            chars in proptest::collection::vec(
                proptest::sample::select(vec![
                    '/', '.', 'a', 'z', ' ', '\u{0}', '\u{1f}', '\u{7f}', '\u{85}', '\u{a0}',
                    'é', '\u{e000}', '\u{fffd}', '\u{fff0}', '😀', '-', '~', '0',
                ]),
                0..40,
            )
        ) {
            let path: String = rooted.then_some('/').into_iter().chain(chars).collect();
            proptest::prop_assert_eq!(is_valid(&path), is_valid_by_segments(&path), "{:?}", path);
            let by_rfind = path.rfind('/').map(|i| (&path[..i], &path[i + 1..]));
            proptest::prop_assert_eq!(split(&path), by_rfind, "{:?}", path);
        }
    }

    proptest::proptest! {
        /// Printable ASCII without a '.', as nearly every path is, at every
        /// length up to 64 bytes.
        #[test]
        fn the_check_of_plain_paths_agrees_with_the_rule(
            chars in proptest::collection::vec(
                proptest::sample::select(vec!['/', 'a', 'b', 'z', '0', '~', ' ', '-']),
                0..64,
            )
        ) {
            let path: String = std::iter::once('/').chain(chars).collect();
            proptest::prop_assert_eq!(is_valid(&path), is_valid_by_segments(&path), "{:?}", path);
        }
    }

    /// Each kind of byte that makes a path invalid or needs a second look,
    /// and a "//", at every place of a long path.
    #[test]
    fn every_byte_of_a_long_path_is_checked() {
        let plain = "/abcdefgh/ijklmnop/qrstuvwx/yz0123";
        for at in 1..plain.len() {
            for insert in [
                "\u{0}", "\u{1f}", "\u{7f}", ".", "/.", "/..", "é", "\u{e000}", "/", "//",
            ] {
                let path = format!("{}{insert}{}", &plain[..at], &plain[at..]);
                assert_eq!(is_valid(&path), is_valid_by_segments(&path), "{path:?}");
            }
        }
    }

    #[test]
    fn splits_at_the_last_slash() {
        assert_eq!(split("/a"), Some(("", "a")));
        assert_eq!(split("/a/b"), Some(("/a", "b")));
        assert_eq!(split("/foo/"), Some(("/foo", "")));
        assert_eq!(split("x"), None);
        assert_eq!(parent_for_event("/a"), "/");
        assert_eq!(parent_for_event("/a/b"), "/a");
    }

    #[test]
    fn suffix_is_ten_digits_and_overflows_like_java() {
        assert_eq!(sequence_suffix(0), "0000000000");
        assert_eq!(sequence_suffix(42), "0000000042");
        assert_eq!(sequence_suffix(i32::MAX), "2147483647");
        assert_eq!(sequence_suffix(-1), "-000000001");
        assert_eq!(sequence_suffix(i32::MIN), "-2147483648");
    }
}
