//! [`Reply`]: a successful reply body, and how it goes out.

use bytes::Bytes;

use crate::proto::*;
use crate::session::ConnId;
use crate::state::State;

/// A successful reply body.
#[derive(Debug)]
pub(crate) enum Reply {
    None,
    Path(String),
    PathStat(String, Stat),
    Stat(Stat),
    Data(Option<Bytes>, Stat),
    Children(Vec<String>),
    Children2(Vec<String>, Stat),
    Acl(Vec<Acl>, Stat),
    Ephemerals(Vec<String>),
    Count(i32),
    WhoAmI(Vec<ClientInfo>),
    /// addWatch answers `ErrorResponse{0}`: four zero bytes.
    AddWatch,
}

impl Reply {
    pub(crate) fn send(self, st: &mut State, conn: ConnId, xid: i32, zxid: i64) {
        match self {
            Reply::None => st.reply_header(conn, xid, zxid, 0),
            Reply::Path(path) => st.reply(conn, xid, zxid, &CreateResponse { path }),
            Reply::PathStat(path, stat) => {
                st.reply(conn, xid, zxid, &Create2Response { path, stat })
            }
            Reply::Stat(stat) => st.reply(conn, xid, zxid, &StatResponse { stat }),
            Reply::Data(data, stat) => st.reply(conn, xid, zxid, &GetDataResponse { data, stat }),
            Reply::Children(children) => {
                st.reply(conn, xid, zxid, &GetChildrenResponse { children })
            }
            Reply::Children2(children, stat) => {
                st.reply(conn, xid, zxid, &GetChildren2Response { children, stat })
            }
            Reply::Acl(acl, stat) => st.reply(conn, xid, zxid, &GetAclResponse { acl, stat }),
            Reply::Ephemerals(ephemerals) => {
                st.reply(conn, xid, zxid, &GetEphemeralsResponse { ephemerals })
            }
            Reply::AddWatch => st.reply(conn, xid, zxid, &ErrorResponse { err: 0 }),
            Reply::WhoAmI(client_info) => {
                st.reply(conn, xid, zxid, &WhoAmIResponse { client_info })
            }
            Reply::Count(total_number) => st.reply(
                conn,
                xid,
                zxid,
                &GetAllChildrenNumberResponse { total_number },
            ),
        }
    }
}
