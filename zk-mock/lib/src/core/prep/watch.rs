//! Watch management: checkWatches, removeWatches, addWatch, setWatches(2).

use crate::core::{Flow, State};
use crate::proto::*;
use crate::watch::Notification;

use super::{Applied, Ctx, Reply};

impl State {
    /// Handles one request of this family.
    pub(super) fn handle_watch(&mut self, cx: Ctx<'_>, req: Request) -> (Flow, Applied) {
        let Ctx {
            conn, server, xid, ..
        } = cx;
        let applied = match req {
            Request::CheckWatches(r) => self.read(cx, |st| {
                match st.watches.check(r.watcher_type, &r.path, conn) {
                    None => Err(ErrorCode::MarshallingError),
                    Some(true) => Ok(Reply::None),
                    Some(false) => Err(ErrorCode::NoWatcher),
                }
            }),
            Request::RemoveWatches(r) => self.read(cx, |st| {
                match st.watches.remove(r.watcher_type, &r.path, conn) {
                    None => Err(ErrorCode::MarshallingError),
                    Some(true) => Ok(Reply::None),
                    Some(false) => Err(ErrorCode::NoWatcher),
                }
            }),
            Request::AddWatch(r) => self.read(cx, |st| {
                // No ACL and no existence check; an unknown mode is an
                // IllegalArgumentException, i.e. MARSHALLINGERROR.
                let recursive = match r.mode {
                    0 => false,
                    1 => true,
                    _ => return Err(ErrorCode::MarshallingError),
                };
                st.watches.add_persistent(&r.path, conn, recursive);
                Ok(Reply::AddWatch)
            }),
            Request::SetWatches(w) => {
                let mut notes: Vec<Notification> = Vec::new();
                let replica = &mut self.ensemble.servers[server];
                replica.watches.set_watches(
                    &replica.tree,
                    conn,
                    w.relative_zxid,
                    &w.data_watches,
                    &w.exist_watches,
                    &w.child_watches,
                    &mut notes,
                );
                for p in &w.persistent_watches {
                    replica.watches.add_persistent(p, conn, false);
                }
                for p in &w.persistent_recursive_watches {
                    replica.watches.add_persistent(p, conn, true);
                }
                let zxid = replica.last_zxid();
                self.notify(notes, 0);
                self.reply_header(conn, xid, zxid, 0);
                Applied { err: 0, zxid }
            }
            // The router sends only this family here.
            _ => return self.unimplemented(conn, xid),
        };
        (Flow::Continue, applied)
    }
}
