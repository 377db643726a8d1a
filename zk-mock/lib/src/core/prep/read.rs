//! Reads: exists, getData, getChildren(2), getACL, sync,
//! getEphemerals, getAllChildrenNumber. Each answers with the last
//! processed zxid.

use crate::core::{Flow, State};
use crate::proto::*;
use crate::record::WatchKind;
use crate::watch::Table;

use super::{Applied, Ctx, Reply};

impl State {
    /// Handles one request of this family.
    pub(super) fn handle_read(&mut self, cx: Ctx<'_>, req: Request) -> (Flow, Applied) {
        let Ctx {
            conn,
            server,
            session,
            xid,
            op,
            caller,
            ..
        } = cx;
        let applied = match req {
            Request::Exists(r) => self.read(cx, |st| {
                if r.path.contains('\0') {
                    return Err(ErrorCode::BadArguments);
                }
                // The watch is registered even when the node is missing
                // (`DataTree.statNode` adds it before the null check). The
                // server keeps it in the data table either way; the recorder
                // calls a watch on a missing node an exist watch.
                if r.watch {
                    let kind = if st.tree.get(&r.path).is_some() {
                        WatchKind::Data
                    } else {
                        WatchKind::Exist
                    };
                    st.watches.add(Table::Data, &r.path, conn, kind);
                }
                let node = st.tree.get(&r.path).ok_or(ErrorCode::NoNode)?;
                Ok(Reply::Stat(node.stat()))
            }),
            Request::GetData(r) => self.read(cx, |st| {
                let node = st.tree.read(&r.path, perms::READ, caller)?;
                let out = Reply::Data(node.data.clone(), node.stat());
                if r.watch {
                    st.watches.add(Table::Data, &r.path, conn, WatchKind::Data);
                }
                Ok(out)
            }),
            Request::GetChildren(r) | Request::GetChildren2(r) => {
                let two = op == OpCode::GetChildren2 as i32;
                self.read(cx, |st| {
                    let node = st.tree.read(&r.path, perms::READ, caller)?;
                    let children = node.listing();
                    let stat = node.stat();
                    if r.watch {
                        st.watches
                            .add(Table::Child, &r.path, conn, WatchKind::Child);
                    }
                    Ok(if two {
                        Reply::Children2(children, stat)
                    } else {
                        Reply::Children(children)
                    })
                })
            }
            Request::GetAcl(r) => self.read(cx, |st| {
                let node = st.tree.read(&r.path, perms::READ | perms::ADMIN, caller)?;
                let mut acl: Vec<Acl> = node.acl.to_vec();
                // Without ADMIN, digest ids are masked to `user:x`.
                if crate::acl::check(&node.acl, perms::ADMIN, caller.auth).is_err() {
                    for a in acl.iter_mut().filter(|a| a.id.scheme == "digest") {
                        if let Some(i) = a.id.id.find(':') {
                            a.id.id.to_mut().replace_range(i.., ":x");
                        }
                    }
                }
                Ok(Reply::Acl(acl, node.stat()))
            }),
            Request::Sync(r) => {
                // The server catches up with the leader before it answers
                // (`FollowerRequestProcessor` sends sync to the leader, and the
                // answer comes after every commit before it).
                self.catch_up(server);
                self.read(cx, |_| Ok(Reply::Path(r.path.as_str().into())))
            }
            Request::GetEphemerals(r) => self.read(cx, |st| {
                let prefix = r.path.trim();
                let all = prefix.is_empty() || prefix == "/";
                let ephemerals = st
                    .tree
                    .ephemerals_of(session)
                    .filter(|p| all || p.starts_with(&r.path))
                    .map(str::to_string)
                    .collect();
                Ok(Reply::Ephemerals(ephemerals))
            }),
            Request::GetAllChildrenNumber(r) => self.read(cx, |st| {
                st.tree.read(&r.path, perms::READ, caller)?;
                // "/" is special-cased (`nodes.size() - 2`); "" counts every
                // key starting with "/", i.e. all nodes but the "" alias.
                let n = if r.path == "/" {
                    st.tree.node_count() - 2
                } else {
                    let prefix = format!("{}/", r.path);
                    st.tree
                        .iter()
                        .filter(|(p, _)| p.starts_with(&prefix))
                        .count()
                };
                Ok(Reply::Count(n as i32))
            }),
            // The router sends only this family here.
            _ => return self.unimplemented(conn, xid),
        };
        (Flow::Continue, applied)
    }
}
