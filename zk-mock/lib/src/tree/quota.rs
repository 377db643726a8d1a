//! Quota bookkeeping (`DataTree`'s `pTrie`, `updateQuotaStat`,
//! `updateQuotaForPath`). Creating `/zookeeper/quota<path>/zookeeper_limits`
//! puts `<path>` under quota; creating its `zookeeper_stats` sibling makes the
//! server count the nodes and bytes under `<path>` into it; every later
//! create, delete and setData below `<path>` updates those counts in place
//! (no version, no zxid, no watch). Limits are never enforced
//! (`zookeeper.enforceQuota` is off by default), as in ZooKeeper 3.8.

use std::collections::BTreeMap;

use bytes::Bytes;

use super::{path, DataTree};

/// `Quotas.quotaZookeeper`.
pub(crate) const QUOTA_ROOT: &str = "/zookeeper/quota";
const LIMIT_NODE: &str = "zookeeper_limits";
const STAT_NODE: &str = "zookeeper_stats";

/// `StatsTrack`: `count=N,bytes=M` and, after a `;`, any other `key=value`
/// pairs in key order.
fn parse_stats(data: Option<&Bytes>) -> BTreeMap<String, i64> {
    let text = data
        .map(|d| String::from_utf8_lossy(d).into_owned())
        .unwrap_or_default();
    text.split([',', ';'])
        .filter(|kv| !kv.is_empty())
        .filter_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            Some((k.to_string(), v.trim().parse().ok()?))
        })
        .collect()
}

fn format_stats(stats: &BTreeMap<String, i64>) -> String {
    let get = |k: &str| stats.get(k).copied().unwrap_or(-1);
    let mut out = format!("count={},bytes={}", get("count"), get("bytes"));
    let rest: Vec<String> = stats
        .iter()
        .filter(|(k, _)| k.as_str() != "count" && k.as_str() != "bytes")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if !rest.is_empty() {
        out.push(';');
        out.push_str(&rest.join(";"));
    }
    out
}

/// `Quotas.trimQuotaPath`: `/zookeeper/quota/a/b` → `/a/b`.
fn trim(quota_path: &str) -> &str {
    &quota_path[QUOTA_ROOT.len()..]
}

impl DataTree {
    /// `getMaxPrefixWithQuota`: the deepest path under quota that is `path`
    /// or one of its ancestors (never `/`).
    fn quota_prefix(&self, path: &str) -> Option<String> {
        if self.quotas.is_empty() {
            return None;
        }
        let mut p = path;
        loop {
            if p.is_empty() || p == "/" {
                return None;
            }
            if self.quotas.contains(p) {
                return Some(p.to_string());
            }
            p = match p.rfind('/') {
                Some(i) => &p[..i],
                None => return None,
            };
        }
    }

    /// Rewrites the stats node of `prefix` in place (`updateQuotaStat`).
    fn update_quota_stat(&mut self, prefix: &str, bytes: i64, count: i64) {
        let stat_path = format!("{QUOTA_ROOT}{prefix}/{STAT_NODE}");
        let Some(node) = self.nodes.get(&stat_path) else {
            tracing::debug!(stat_path, "missing quota stats node");
            return;
        };
        let mut stats = parse_stats(node.data.as_ref());
        let get = |s: &BTreeMap<String, i64>, k: &str| s.get(k).copied().unwrap_or(-1);
        let (c, b) = (get(&stats, "count") + count, get(&stats, "bytes") + bytes);
        stats.insert("count".into(), c);
        stats.insert("bytes".into(), b);
        self.save(&stat_path);
        if let Some(node) = self.nodes.get_mut(&stat_path) {
            node.data = Some(Bytes::from(format_stats(&stats)));
        }
    }

    /// Counts the nodes and bytes of the subtree at `path` into its stats
    /// node (`updateQuotaForPath`).
    fn update_quota_for_path(&mut self, path: &str) {
        let (mut count, mut bytes) = (0i64, 0i64);
        let mut stack = vec![path.to_string()];
        while let Some(p) = stack.pop() {
            let Some(n) = self.nodes.get(Self::key(&p)) else {
                continue;
            };
            count += 1;
            bytes += n.data.as_ref().map_or(0, |d| d.len() as i64);
            for c in n.children.iter() {
                stack.push(path::child(&p, c));
            }
        }
        let stat_path = format!("{QUOTA_ROOT}{path}/{STAT_NODE}");
        let stats = BTreeMap::from([("count".to_string(), count), ("bytes".to_string(), bytes)]);
        self.save(&stat_path);
        if let Some(node) = self.nodes.get_mut(&stat_path) {
            node.data = Some(Bytes::from(format_stats(&stats)));
        }
    }

    /// After `createNode`: limits and stats nodes, then the quota counts.
    pub(super) fn quota_created(&mut self, parent: &str, child: &str, path: &str, bytes: i64) {
        if parent.starts_with(QUOTA_ROOT) {
            if child == LIMIT_NODE {
                self.quotas.insert(trim(parent).to_string());
            }
            if child == STAT_NODE {
                self.update_quota_for_path(trim(parent));
            }
        }
        if let Some(prefix) = self.quota_prefix(path) {
            self.update_quota_stat(&prefix, bytes, 1);
        }
    }

    /// After `deleteNode`.
    pub(super) fn quota_deleted(&mut self, parent: &str, child: &str, path: &str, bytes: i64) {
        if parent.starts_with("/zookeeper")
            && child == LIMIT_NODE
            && parent.len() >= QUOTA_ROOT.len()
        {
            self.quotas.remove(trim(parent));
        }
        if let Some(prefix) = self.quota_prefix(path) {
            self.update_quota_stat(&prefix, -bytes, -1);
        }
    }

    /// After `setData`.
    pub(super) fn quota_data_changed(&mut self, path: &str, bytes_diff: i64) {
        if let Some(prefix) = self.quota_prefix(path) {
            self.update_quota_stat(&prefix, bytes_diff, 0);
        }
    }

    /// Rebuilds the set of paths under quota from the limits nodes (after a
    /// rolled-back multi; `DataTree.setupQuota`).
    pub(super) fn rebuild_quotas(&mut self) {
        let suffix = format!("/{LIMIT_NODE}");
        self.quotas = self
            .nodes
            .keys()
            .filter(|p| p.starts_with(QUOTA_ROOT) && p.ends_with(&suffix))
            .map(|p| trim(&p[..p.len() - suffix.len()]).to_string())
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_parse_and_print_as_statstrack_does() {
        let s = parse_stats(Some(&Bytes::from_static(b"count=5,bytes=-1;zz=1;a=2")));
        assert_eq!(format_stats(&s), "count=5,bytes=-1;a=2;zz=1");
        assert_eq!(format_stats(&parse_stats(None)), "count=-1,bytes=-1");
    }
}
