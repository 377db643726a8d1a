//! `ConnectRequest` and `ConnectResponse`, each with the optional trailing
//! `readOnly` byte that is not part of the Jute record.

use bytes::{Bytes, BytesMut};

use crate::codec::{jute, Field, Parse, Record};

/// The first packet on a connection (`ConnectRequest` plus the optional `readOnly`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectRequest {
    /// Clients send 0; the server ignores it.
    pub protocol_version: i32,
    /// The highest zxid the client has seen; a value ahead of the server is refused.
    pub last_zxid_seen: i64,
    /// Requested session timeout in ms.
    pub time_out: i32,
    /// 0 for a new session, otherwise the session to re-attach.
    pub session_id: i64,
    /// The session password (16 bytes, or empty/zeros for a new session).
    pub passwd: Option<Bytes>,
    /// The trailing byte, `None` when the client did not send it (an "old client").
    pub read_only: Option<bool>,
}

impl Record for ConnectRequest {
    fn encode(&self, buf: &mut BytesMut) {
        self.protocol_version.put(buf);
        self.last_zxid_seen.put(buf);
        self.time_out.put(buf);
        self.session_id.put(buf);
        self.passwd.put(buf);
        if let Some(ro) = self.read_only {
            ro.put(buf);
        }
    }

    fn parse(input: &[u8]) -> Parse<'_, Self> {
        let (input, protocol_version) = jute::int(input)?;
        let (input, last_zxid_seen) = jute::long(input)?;
        let (input, time_out) = jute::int(input)?;
        let (input, session_id) = jute::long(input)?;
        let (input, passwd) = jute::buffer(input)?;
        // `ZooKeeperServer.processConnectRequest` reads readOnly inside a try/catch.
        let (input, read_only) = match jute::boolean(input) {
            Ok((rest, ro)) => (rest, Some(ro)),
            Err(_) => (input, None),
        };
        Ok((
            input,
            ConnectRequest {
                protocol_version,
                last_zxid_seen,
                time_out,
                session_id,
                passwd,
                read_only,
            },
        ))
    }
}

/// The server's answer to a [`ConnectRequest`]; it has no zxid and no reply header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectResponse {
    /// Always 0.
    pub protocol_version: i32,
    /// The negotiated timeout; 0 means the session is invalid or expired.
    pub time_out: i32,
    /// The session id; 0 when invalid.
    pub session_id: i64,
    /// The 16-byte session password (zeros when invalid).
    pub passwd: Option<Bytes>,
    /// Present only when the request carried `readOnly`.
    pub read_only: Option<bool>,
}

impl ConnectResponse {
    /// The answer for an unknown, expired or wrongly-authenticated session:
    /// timeout 0, id 0, sixteen zero bytes (`ZooKeeperServer.finishSessionInit(cnxn, false)`).
    pub fn expired(read_only: Option<bool>) -> ConnectResponse {
        ConnectResponse {
            protocol_version: 0,
            time_out: 0,
            session_id: 0,
            passwd: Some(Bytes::from_static(&[0; 16])),
            read_only: read_only.map(|_| false),
        }
    }
}

impl Record for ConnectResponse {
    fn encode(&self, buf: &mut BytesMut) {
        self.protocol_version.put(buf);
        self.time_out.put(buf);
        self.session_id.put(buf);
        self.passwd.put(buf);
        if let Some(ro) = self.read_only {
            ro.put(buf);
        }
    }

    fn parse(input: &[u8]) -> Parse<'_, Self> {
        let (input, protocol_version) = jute::int(input)?;
        let (input, time_out) = jute::int(input)?;
        let (input, session_id) = jute::long(input)?;
        let (input, passwd) = jute::buffer(input)?;
        let (input, read_only) = match jute::boolean(input) {
            Ok((rest, ro)) => (rest, Some(ro)),
            Err(_) => (input, None),
        };
        Ok((
            input,
            ConnectResponse {
                protocol_version,
                time_out,
                session_id,
                passwd,
                read_only,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(read_only: Option<bool>) -> ConnectRequest {
        ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 5,
            time_out: 30000,
            session_id: 0,
            passwd: Some(Bytes::from_static(&[0; 16])),
            read_only,
        }
    }

    #[test]
    fn connect_request_round_trips_with_and_without_read_only() {
        for ro in [None, Some(false), Some(true)] {
            let r = request(ro);
            let b = r.to_bytes();
            assert_eq!(b.len(), if ro.is_some() { 45 } else { 44 });
            assert_eq!(ConnectRequest::decode(&b).unwrap(), r);
        }
    }

    #[test]
    fn connect_request_short_input_is_an_error() {
        let b = request(None).to_bytes();
        for cut in 0..b.len() {
            assert!(ConnectRequest::decode(&b[..cut]).is_err(), "cut {cut}");
        }
    }

    #[test]
    fn connect_response_round_trips_and_is_37_bytes() {
        let r = ConnectResponse {
            protocol_version: 0,
            time_out: 4000,
            session_id: 9,
            passwd: Some(Bytes::from_static(&[3; 16])),
            read_only: Some(false),
        };
        let b = r.to_bytes();
        assert_eq!(b.len(), 37);
        assert_eq!(ConnectResponse::decode(&b).unwrap(), r);
        for cut in 0..b.len() - 1 {
            assert!(ConnectResponse::decode(&b[..cut]).is_err(), "cut {cut}");
        }
        let e = ConnectResponse::expired(None);
        assert_eq!(e.to_bytes().len(), 36);
    }
}
