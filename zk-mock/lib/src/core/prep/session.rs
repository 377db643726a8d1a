//! Session ops: ping, closeSession, whoAmI, auth and SASL.

use crate::core::{Flow, State};
use crate::proto::*;
use crate::record::SessionEvent;

use super::{Applied, Ctx, Reply};

impl State {
    /// Handles one request of this family.
    pub(super) fn handle_session(&mut self, cx: Ctx<'_>, req: Request) -> (Flow, Applied) {
        let Ctx {
            conn,
            server,
            session,
            xid,
            caller,
            ..
        } = cx;
        let applied = match req {
            Request::Ping => {
                let zxid = self.ensemble.servers[server].last_zxid();
                self.reply_header(conn, XID_PING, zxid, 0);
                Applied { err: 0, zxid }
            }
            Request::CloseSession => {
                // Answered, and the connection closed, when this server
                // applies the closeSession: at once on the leader.
                let zxid =
                    match self.close_session(session, SessionEvent::Closed, Some((conn, xid))) {
                        Some(zxid) => zxid,
                        None => {
                            let zxid = self.ensemble.servers[server].last_zxid();
                            self.reply_header(conn, xid, zxid, 0);
                            self.close_conn(conn);
                            zxid
                        }
                    };
                let flow = if self.out.conns.contains_key(&conn) {
                    Flow::Continue
                } else {
                    Flow::Close
                };
                return (flow, Applied { err: 0, zxid });
            }
            Request::WhoAmI => self.read(cx, |_| {
                // `getUserName`: digest ids show the user, the part before ':'.
                let client_info = caller
                    .auth
                    .iter()
                    .map(|id| ClientInfo {
                        auth_scheme: id.scheme.to_string(),
                        user: match &*id.scheme {
                            "digest" => id.id.split(':').next().unwrap_or_default().to_string(),
                            _ => id.id.to_string(),
                        },
                    })
                    .collect();
                Ok(Reply::WhoAmI(client_info))
            }),
            Request::Auth(a) => {
                // Answered at once with zxid 0 (`ZooKeeperServer.processPacket`).
                // digest never fails; ip adds the peer address; any other
                // scheme is AUTHFAILED and the connection is closed (the
                // session lives on until it times out).
                let new_ids = match a.scheme.as_str() {
                    "digest" => {
                        let text = String::from_utf8_lossy(a.auth.as_deref().unwrap_or_default());
                        let id = crate::acl::digest(&text);
                        let is_super = self.settings.super_digest.as_deref() == Some(id.as_str());
                        let mut ids = vec![Id {
                            scheme: "digest".into(),
                            id: id.into(),
                        }];
                        if is_super {
                            ids.push(Id {
                                scheme: "super".into(),
                                id: "".into(),
                            });
                        }
                        ids
                    }
                    "ip" => {
                        let peer = self
                            .out
                            .conns
                            .get(&conn)
                            .map(|c| c.peer.ip().to_string())
                            .unwrap_or_default();
                        vec![Id {
                            scheme: "ip".into(),
                            id: peer.into(),
                        }]
                    }
                    _ => {
                        let err = ErrorCode::AuthFailed.code();
                        self.reply_header(conn, xid, 0, err);
                        self.close_conn(conn);
                        return (Flow::Close, Applied { err, zxid: 0 });
                    }
                };
                if let Some(c) = self.out.conns.get_mut(&conn) {
                    let mut auth = c.auth.to_vec();
                    for id in new_ids {
                        if !auth.contains(&id) {
                            auth.push(id);
                            crate::acl::java_set_order(&mut auth);
                        }
                    }
                    c.auth = auth.into();
                }
                self.reply_header(conn, xid, 0, 0);
                Applied { err: 0, zxid: 0 }
            }
            Request::Sasl(_) => {
                // No SASL is configured: the server answers inline with an
                // empty (null) token and nothing is authenticated.
                // Answered from the I/O thread like auth: zxid 0.
                self.reply(conn, xid, 0, &SaslResponse { token: None });
                Applied { err: 0, zxid: 0 }
            }
            // The router sends only this family here.
            _ => return self.unimplemented(conn, xid),
        };
        (Flow::Continue, applied)
    }
}
