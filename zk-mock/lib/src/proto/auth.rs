//! Authentication records: `AuthPacket` and `WhoAmIResponse`.

use bytes::Bytes;

use crate::codec::record;

record! {
    /// `AuthPacket {int type; ustring scheme; buffer auth}` (op 100, xid −4).
    pub struct AuthPacket {
        /// Unused; clients send 0.
        pub auth_type: i32,
        /// The authentication scheme (`digest`, `ip`, …).
        pub scheme: String,
        /// The credentials, e.g. `user:password` for `digest`.
        pub auth: Option<Bytes>,
    }
}

record! {
    /// `SetSASLResponse {buffer token}` (op 102); also the layout of `GetSASLRequest`.
    pub struct SaslResponse {
        /// The SASL token.
        pub token: Option<Bytes>,
    }
}

record! {
    /// `ClientInfo {ustring authScheme; ustring user}`.
    pub struct ClientInfo {
        /// The scheme of an id the session holds.
        pub auth_scheme: String,
        /// The id within the scheme.
        pub user: String,
    }
}

record! {
    /// `WhoAmIResponse` (op 107).
    pub struct WhoAmIResponse {
        /// The session's authentication ids.
        pub client_info: Vec<ClientInfo>,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::assert_round_trip;

    #[test]
    fn auth_records_round_trip() {
        assert_round_trip(&AuthPacket {
            auth_type: 0,
            scheme: "digest".into(),
            auth: Some(Bytes::from_static(b"u:p")),
        });
        assert_round_trip(&SaslResponse { token: None });
        assert_round_trip(&WhoAmIResponse {
            client_info: vec![ClientInfo {
                auth_scheme: "ip".into(),
                user: "127.0.0.1".into(),
            }],
        });
    }
}
