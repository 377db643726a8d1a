//! Jute primitives: nom parsers over complete byte slices and `BufMut` writers.
//!
//! Nothing here knows about ZooKeeper records. Every parser is a *complete*
//! parser: it only ever runs on a whole frame, so running out of bytes is a
//! protocol error ([`DecodeError::Short`]), never "wait for more".
//!
//! Encoding follows `BinaryOutputArchive` / `BinaryInputArchive`:
//! `int` and `long` are big-endian, `boolean` is one byte (any non-zero byte
//! reads as true), `buffer` and `ustring` are an int length then bytes with
//! −1 meaning null, `vector` is an int count then elements with −1 meaning null.

use bytes::{BufMut, Bytes};
use nom::error::{ErrorKind, ParseError};
use nom::number::complete::{be_i32, be_i64, be_u8};
use nom::IResult;

/// Largest length a `buffer` or `ustring` may claim: `jute.maxbuffer` plus
/// `jute.maxbuffer.extrasize`, both 0xfffff by default (`BinaryInputArchive.checkLength`).
pub const MAX_FIELD_LEN: i32 = 2 * 0xfffff;

/// Why a record could not be decoded from a whole frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The frame ended before the record did.
    #[error("record runs past the end of its frame")]
    Short,
    /// A buffer, string or vector claimed a length Java would reject ("Unreasonable length").
    #[error("unreasonable length {0}")]
    UnreasonableLength(i32),
    /// A required field was null, or held a value outside its domain.
    #[error("invalid field: {0}")]
    Invalid(&'static str),
}

impl ParseError<&[u8]> for DecodeError {
    fn from_error_kind(_input: &[u8], kind: ErrorKind) -> Self {
        match kind {
            ErrorKind::Eof | ErrorKind::Complete => DecodeError::Short,
            _ => DecodeError::Invalid("malformed"),
        }
    }

    fn append(_input: &[u8], _kind: ErrorKind, other: Self) -> Self {
        other
    }
}

/// The result type of every Jute parser.
pub type Parse<'a, T> = IResult<&'a [u8], T, DecodeError>;

fn fail<T>(e: DecodeError) -> Parse<'static, T> {
    Err(nom::Err::Failure(e))
}

/// Turns a nom error into the decode error it carries.
pub fn into_decode_error(e: nom::Err<DecodeError>) -> DecodeError {
    match e {
        nom::Err::Incomplete(_) => DecodeError::Short,
        nom::Err::Error(e) | nom::Err::Failure(e) => e,
    }
}

/// `int`: 4 bytes big-endian.
pub fn int(input: &[u8]) -> Parse<'_, i32> {
    be_i32(input)
}

/// `long`: 8 bytes big-endian.
pub fn long(input: &[u8]) -> Parse<'_, i64> {
    be_i64(input)
}

/// `boolean`: one byte, any non-zero value is true (`BinaryInputArchive.readBool`).
pub fn boolean(input: &[u8]) -> Parse<'_, bool> {
    let (rest, b) = be_u8(input)?;
    Ok((rest, b != 0))
}

fn length(input: &[u8]) -> Parse<'_, Option<usize>> {
    let (rest, len) = int(input)?;
    if len == -1 {
        return Ok((rest, None));
    }
    if !(0..=MAX_FIELD_LEN).contains(&len) {
        return fail(DecodeError::UnreasonableLength(len));
    }
    let len = len as usize;
    if rest.len() < len {
        return Err(nom::Err::Error(DecodeError::Short));
    }
    Ok((rest, Some(len)))
}

/// `buffer`: length then bytes; length −1 is null (`None`).
pub fn buffer(input: &[u8]) -> Parse<'_, Option<Bytes>> {
    let (rest, len) = length(input)?;
    match len {
        None => Ok((rest, None)),
        Some(n) => Ok((&rest[n..], Some(Bytes::copy_from_slice(&rest[..n])))),
    }
}

/// A `ustring`'s bytes, not yet checked as UTF-8; `None` is null.
pub fn ubytes_opt(input: &[u8]) -> Parse<'_, Option<&[u8]>> {
    let (rest, len) = length(input)?;
    Ok(match len {
        None => (rest, None),
        Some(n) => (&rest[n..], Some(&rest[..n])),
    })
}

/// A `ustring`'s bytes as text: borrowed when they are valid UTF-8, as
/// nearly every string is (`str::from_utf8` checks ASCII a word at a
/// time); anything else with U+FFFD, as Java's `new String(bytes, UTF_8)`
/// decodes it.
pub fn utf8(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// `ustring` that may be null, borrowed from the input when it is valid UTF-8
/// (as nearly every string is); anything else decodes as [`ustring_opt`] does.
pub fn ustr_opt(input: &[u8]) -> Parse<'_, Option<std::borrow::Cow<'_, str>>> {
    let (rest, bytes) = ubytes_opt(input)?;
    Ok((rest, bytes.map(utf8)))
}

/// `ustring` that may be null. Invalid UTF-8 decodes with U+FFFD, as Java's
/// `new String(bytes, UTF_8)` does (path validation then rejects it).
pub fn ustring_opt(input: &[u8]) -> Parse<'_, Option<String>> {
    let (rest, bytes) = ubytes_opt(input)?;
    Ok((rest, bytes.map(|b| utf8(b).into_owned())))
}

/// `ustring` that must not be null.
pub fn ustring(input: &[u8]) -> Parse<'_, String> {
    let (rest, s) = ustring_opt(input)?;
    match s {
        Some(s) => Ok((rest, s)),
        None => fail(DecodeError::Invalid("null string")),
    }
}

/// [`ustring`] as a shared string, with one allocation (the string's own).
pub fn ustring_shared(input: &[u8]) -> Parse<'_, std::sync::Arc<str>> {
    match ustr_opt(input)? {
        (rest, Some(s)) => Ok((rest, std::sync::Arc::from(&*s))),
        (_, None) => fail(DecodeError::Invalid("null string")),
    }
}

/// `vector<T>`: count then elements. Null (−1) and other negative counts read
/// as empty, as Java's `BinaryIndex` does.
pub fn vector<'a, T>(
    mut element: impl FnMut(&'a [u8]) -> Parse<'a, T>,
) -> impl FnMut(&'a [u8]) -> Parse<'a, Vec<T>> {
    move |input: &'a [u8]| {
        let (mut rest, count) = int(input)?;
        if count <= 0 {
            return Ok((rest, Vec::new()));
        }
        // Every element is at least one byte: a count larger than the
        // remaining input is short without allocating for it.
        if count as usize > rest.len() {
            return Err(nom::Err::Error(DecodeError::Short));
        }
        let mut out = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let (r, v) = element(rest)?;
            out.push(v);
            rest = r;
        }
        Ok((rest, out))
    }
}

/// Writes an `int`.
pub fn put_int(buf: &mut impl BufMut, v: i32) {
    buf.put_i32(v);
}

/// Writes a `long`.
pub fn put_long(buf: &mut impl BufMut, v: i64) {
    buf.put_i64(v);
}

/// Writes a `boolean`.
pub fn put_bool(buf: &mut impl BufMut, v: bool) {
    buf.put_u8(v as u8);
}

/// Writes a `buffer`; `None` is written as length −1.
pub fn put_buffer(buf: &mut impl BufMut, v: Option<&[u8]>) {
    match v {
        None => buf.put_i32(-1),
        Some(b) => {
            buf.put_i32(b.len() as i32);
            buf.put_slice(b);
        }
    }
}

/// Writes a `ustring`.
pub fn put_ustring(buf: &mut impl BufMut, v: &str) {
    put_buffer(buf, Some(v.as_bytes()));
}

/// Writes a `ustring` that may be null.
pub fn put_ustring_opt(buf: &mut impl BufMut, v: Option<&str>) {
    put_buffer(buf, v.map(str::as_bytes));
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    #[test]
    fn null_and_empty_buffers_differ() {
        let mut b = BytesMut::new();
        put_buffer(&mut b, None);
        put_buffer(&mut b, Some(b""));
        let (rest, a) = buffer(&b).unwrap();
        let (rest, c) = buffer(rest).unwrap();
        assert!(rest.is_empty());
        assert_eq!(a, None);
        assert_eq!(c, Some(Bytes::new()));
    }

    #[test]
    fn unreasonable_lengths_are_rejected_not_allocated() {
        let mut b = BytesMut::new();
        put_int(&mut b, i32::MAX);
        assert_eq!(
            buffer(&b).map_err(into_decode_error).unwrap_err(),
            DecodeError::UnreasonableLength(i32::MAX)
        );
        let mut b = BytesMut::new();
        put_int(&mut b, -7);
        assert!(ustring(&b).is_err());
        let mut b = BytesMut::new();
        put_int(&mut b, 1_000_000);
        assert_eq!(
            vector(int)(&b).map_err(into_decode_error).unwrap_err(),
            DecodeError::Short
        );
    }

    #[test]
    fn short_input_is_short() {
        assert_eq!(
            int(&[0, 0, 1]).map_err(into_decode_error).unwrap_err(),
            DecodeError::Short
        );
        assert_eq!(
            long(&[0; 7]).map_err(into_decode_error).unwrap_err(),
            DecodeError::Short
        );
        assert_eq!(
            ustring(&[0, 0, 0, 5, b'a'])
                .map_err(into_decode_error)
                .unwrap_err(),
            DecodeError::Short
        );
    }

    #[test]
    fn invalid_utf8_decodes_lossily() {
        let mut b = BytesMut::new();
        put_buffer(&mut b, Some(&[b'/', 0xff]));
        assert_eq!(ustring(&b).unwrap().1, "/\u{fffd}");
    }

    #[test]
    fn any_nonzero_byte_is_true() {
        assert!(boolean(&[7]).unwrap().1);
        assert!(!boolean(&[0]).unwrap().1);
    }
}
