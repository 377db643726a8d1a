//! [`Compat`]: which ZooKeeper release the server imitates where 3.8 and 3.9
//! answer the same request differently.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// The ZooKeeper behaviour the server follows where 3.8 and 3.9 differ.
///
/// | | 3.8 (the default, checked against a real 3.8.0 server) | 3.9 |
/// |---|---|---|
/// | notification `ReplyHeader.zxid` | −1 | the zxid of the change that fired it (−1 for SetWatches replays), ZOOKEEPER-4655 |
/// | a standard and a persistent watch on one path, one connection | the later registration replaces the earlier mode | both held, each fires as its mode says, ZOOKEEPER-4466 |
/// | recursive watches | kept in the data and child tables | data table only (same notifications) |
/// | checkWatches / removeWatches | types 1–3; types 1 and 2 match any mode; checkWatches looks at every connection's watches | types 1–5 (4 persistent, 5 persistent recursive, ZOOKEEPER-4471); types 1 and 2 match one-shot watches only; checkWatches looks at the caller's |
/// | create2 inside multi | result type 1, path only | result type 15, path and Stat (ZOOKEEPER-4026) |
/// | check (13) outside multi | a transaction: a zxid consumed, failures answered, success never answered (3.8.0) | UNIMPLEMENTED, and the connection closed |
/// | four-letter words, `srvr` | `3.8.0-zk-mock` | `3.9.0-zk-mock` |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub enum Compat {
    /// ZooKeeper 3.8 (Debian's 3.8.0).
    #[default]
    #[serde(rename = "3.8")]
    V3_8,
    /// ZooKeeper 3.9.
    #[serde(rename = "3.9")]
    V3_9,
}

impl Compat {
    /// `"3.8"` or `"3.9"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Compat::V3_8 => "3.8",
            Compat::V3_9 => "3.9",
        }
    }
}

impl fmt::Display for Compat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A version string that is neither `3.8` nor `3.9`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown ZooKeeper compatibility {0:?}: expected \"3.8\" or \"3.9\"")]
pub struct UnknownCompat(pub String);

impl FromStr for Compat {
    type Err = UnknownCompat;

    fn from_str(s: &str) -> Result<Compat, UnknownCompat> {
        match s.trim() {
            "3.8" => Ok(Compat::V3_8),
            "3.9" => Ok(Compat::V3_9),
            other => Err(UnknownCompat(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_both_versions_and_rejects_others() {
        for c in [Compat::V3_8, Compat::V3_9] {
            assert_eq!(c.to_string().parse::<Compat>(), Ok(c));
        }
        assert_eq!(Compat::default(), Compat::V3_8);
        let e = "3.7".parse::<Compat>().unwrap_err();
        assert!(e.to_string().contains("\"3.7\""), "{e}");
    }
}
