//! Framing (4-byte big-endian length prefix) and the [`Record`] trait.
//!
//! Framing answers one question, "is a whole packet here?", and keeps
//! [`FrameError`] (close this connection) apart from "not yet" (`Ok(None)`).
//! Records are decoded only from whole frames, with complete parsers.

pub mod jute;

use bytes::{Buf, Bytes, BytesMut};

pub use jute::{DecodeError, Parse};

/// Default `jute.maxbuffer`: the largest frame the server accepts (0xfffff bytes,
/// not counting the 4-byte length prefix).
pub const DEFAULT_MAX_PACKET: usize = 0xfffff;

/// A length prefix the server refuses. ZooKeeper closes the connection with no
/// reply (`NIOServerCnxn.readLength`: "Len error").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("frame length {len} outside 0..={max}")]
pub struct FrameError {
    /// The length the peer announced.
    pub len: i64,
    /// The configured maximum.
    pub max: usize,
}

/// Splits one whole frame off the front of `buf`.
///
/// Returns `Ok(None)` when more bytes are needed, and reserves room for the
/// announced frame so the next read can fill it.
pub fn split_frame(buf: &mut BytesMut, max: usize) -> Result<Option<Bytes>, FrameError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = i32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
    if len < 0 || len as usize > max {
        return Err(FrameError {
            len: len.into(),
            max,
        });
    }
    let len = len as usize;
    if buf.len() < 4 + len {
        buf.reserve(4 + len - buf.len());
        return Ok(None);
    }
    buf.advance(4);
    Ok(Some(buf.split_to(len).freeze()))
}

/// Prefixes `body` with its length.
pub fn frame(body: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(4 + body.len());
    out.extend_from_slice(&(body.len() as i32).to_be_bytes());
    out.extend_from_slice(body);
    out.freeze()
}

/// Encodes a frame in one buffer: `encode` appends the body after a
/// placeholder length prefix, which is then filled in.
pub fn framed(capacity: usize, encode: impl FnOnce(&mut BytesMut)) -> Bytes {
    let mut out = BytesMut::with_capacity(4 + capacity);
    frame_into(&mut out, encode);
    out.freeze()
}

/// Appends a frame to an empty `out`: a placeholder length prefix, what
/// `encode` appends, then the prefix filled in.
fn frame_into(out: &mut BytesMut, encode: impl FnOnce(&mut BytesMut)) {
    debug_assert!(out.is_empty());
    frame_onto(out, encode);
}

/// Appends a frame to `out` (which may hold frames already): a
/// placeholder length prefix, what `encode` appends, then the prefix
/// filled in. Returns the frame's length, prefix included.
pub(crate) fn frame_onto(out: &mut BytesMut, encode: impl FnOnce(&mut BytesMut)) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    encode(out);
    let len = (out.len() - at - 4) as i32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    out.len() - at
}

/// The most an emptied output buffer keeps (see [`let_go_if_large`]).
const KEEP_EMPTY: usize = 64 * 1024;

/// Lets an emptied buffer's memory go if it grew past what small replies
/// need (a large reply's): buffers of replies pass from one connection to
/// another, and none should keep a large one it no longer uses.
#[inline]
pub(crate) fn let_go_if_large(buf: &mut BytesMut) {
    if buf.is_empty() && buf.capacity() > KEEP_EMPTY {
        *buf = BytesMut::new();
    }
}

/// How much an [`Arena`] allocates at a time.
const ARENA_CHUNK: usize = 8 * 1024;
/// Below this much room, an [`Arena`] takes a new chunk (or reclaims its
/// own, once every frame cut from it is gone) before it encodes a frame.
const ARENA_MIN_ROOM: usize = 512;

/// Frames encoded one after another into shared chunks: each is cut off
/// as a [`Bytes`] that shares its chunk, so a reply costs no allocation of
/// its own; a chunk whose frames have all been dropped (written out) is
/// used again. A frame larger than a chunk gets a buffer of its own, which
/// goes when the frame does.
#[derive(Debug, Default)]
pub struct Arena {
    buf: BytesMut,
}

impl Arena {
    /// Encodes a frame as [`framed`] does, in the arena.
    pub fn framed(&mut self, encode: impl FnOnce(&mut BytesMut)) -> Bytes {
        let buf = &mut self.buf;
        if buf.capacity() < ARENA_MIN_ROOM {
            buf.reserve(ARENA_CHUNK);
        }
        frame_into(buf, encode);
        let frame = buf.split().freeze();
        if frame.len() > ARENA_CHUNK {
            // The buffer grew for this frame: it is not kept.
            *buf = BytesMut::new();
        }
        frame
    }
}

/// A Jute record: fields in declaration order, no tags, no padding.
pub trait Record: Sized {
    /// Appends the record's encoding.
    fn encode(&self, buf: &mut BytesMut);
    /// Parses the record from the front of a whole frame.
    fn parse(input: &[u8]) -> Parse<'_, Self>;

    /// Decodes a record that must fill `input` up to its end or not; trailing
    /// bytes are allowed, as Java's archives ignore them.
    fn decode(input: &[u8]) -> Result<Self, DecodeError> {
        Self::parse(input)
            .map(|(_, r)| r)
            .map_err(jute::into_decode_error)
    }

    /// Encodes into a fresh buffer.
    fn to_bytes(&self) -> Bytes {
        let mut b = BytesMut::new();
        self.encode(&mut b);
        b.freeze()
    }
}

/// A value that can be a field of a [`Record`].
pub trait Field: Sized {
    /// Appends the field's encoding.
    fn put(&self, buf: &mut BytesMut);
    /// Parses the field.
    fn take(input: &[u8]) -> Parse<'_, Self>;
}

impl Field for i32 {
    fn put(&self, buf: &mut BytesMut) {
        jute::put_int(buf, *self)
    }
    fn take(input: &[u8]) -> Parse<'_, Self> {
        jute::int(input)
    }
}

impl Field for i64 {
    fn put(&self, buf: &mut BytesMut) {
        jute::put_long(buf, *self)
    }
    fn take(input: &[u8]) -> Parse<'_, Self> {
        jute::long(input)
    }
}

impl Field for bool {
    fn put(&self, buf: &mut BytesMut) {
        jute::put_bool(buf, *self)
    }
    fn take(input: &[u8]) -> Parse<'_, Self> {
        jute::boolean(input)
    }
}

/// `buffer`, where null and empty are different values.
impl Field for Option<Bytes> {
    fn put(&self, buf: &mut BytesMut) {
        jute::put_buffer(buf, self.as_deref())
    }
    fn take(input: &[u8]) -> Parse<'_, Self> {
        jute::buffer(input)
    }
}

/// `ustring` that must not be null.
impl Field for String {
    fn put(&self, buf: &mut BytesMut) {
        jute::put_ustring(buf, self)
    }
    fn take(input: &[u8]) -> Parse<'_, Self> {
        jute::ustring(input)
    }
}

/// `ustring` that must not be null, decoded straight into a shared string:
/// a create's path, which the new node, its records and its reply then share.
impl Field for std::sync::Arc<str> {
    fn put(&self, buf: &mut BytesMut) {
        jute::put_ustring(buf, self)
    }
    fn take(input: &[u8]) -> Parse<'_, Self> {
        jute::ustring_shared(input)
    }
}

/// A `vector`: its length, then each item.
pub(crate) fn put_vector<T: Field>(buf: &mut BytesMut, items: &[T]) {
    jute::put_int(buf, items.len() as i32);
    for v in items {
        v.put(buf);
    }
}

impl<T: Field> Field for Vec<T> {
    fn put(&self, buf: &mut BytesMut) {
        put_vector(buf, self)
    }
    fn take(input: &[u8]) -> Parse<'_, Self> {
        jute::vector(T::take)(input)
    }
}

/// Declares a Jute record: a struct whose fields are encoded in declaration
/// order, with a [`Record`] impl that is also usable as a [`Field`].
///
/// `pub struct Name (LEN) { .. }` declares a record whose fields all have a
/// fixed size (`int`, `long`), `LEN` bytes in all: it is encoded on the
/// stack and appended to the buffer in one copy, not one append per field
/// (a `Stat` is in nearly every reply).
macro_rules! record {
    (
        $(#[$meta:meta])*
        pub struct $name:ident $(($len:expr))? {
            $( $(#[$fmeta:meta])* pub $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        ///
        /// Fields carry their Jute names and are encoded in declaration order.
        #[derive(Debug, Clone, PartialEq, Eq, Default)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty ),*
        }

        impl $crate::codec::Record for $name {
            $crate::codec::record!(@encode [$($len)?] $($field)*);
            fn parse(input: &[u8]) -> $crate::codec::Parse<'_, Self> {
                $( let (input, $field) = <$ty as $crate::codec::Field>::take(input)?; )*
                Ok((input, $name { $($field),* }))
            }
        }

        impl $crate::codec::Field for $name {
            fn put(&self, buf: &mut ::bytes::BytesMut) {
                $crate::codec::Record::encode(self, buf)
            }
            fn take(input: &[u8]) -> $crate::codec::Parse<'_, Self> {
                <Self as $crate::codec::Record>::parse(input)
            }
        }
    };
    // Field by field.
    (@encode [] $($field:ident)*) => {
        #[allow(unused_variables)]
        fn encode(&self, buf: &mut ::bytes::BytesMut) {
            $( $crate::codec::Field::put(&self.$field, buf); )*
        }
    };
    // On the stack, then in one copy.
    (@encode [$len:expr] $($field:ident)*) => {
        fn encode(&self, buf: &mut ::bytes::BytesMut) {
            let mut b = [0u8; $len];
            let mut at = 0;
            $( $crate::codec::FixedField::write(&self.$field, &mut b, &mut at); )*
            debug_assert_eq!(at, $len);
            buf.extend_from_slice(&b);
        }
    };
}
pub(crate) use record;

/// A field of fixed size, written into a record's stack buffer (see
/// [`record!`]'s fixed-size form).
pub(crate) trait FixedField {
    /// Writes the field at `*at` in `b` and moves `*at` past it.
    fn write(&self, b: &mut [u8], at: &mut usize);
}

impl FixedField for i32 {
    fn write(&self, b: &mut [u8], at: &mut usize) {
        b[*at..*at + 4].copy_from_slice(&self.to_be_bytes());
        *at += 4;
    }
}

impl FixedField for i64 {
    fn write(&self, b: &mut [u8], at: &mut usize) {
        b[*at..*at + 8].copy_from_slice(&self.to_be_bytes());
        *at += 8;
    }
}

/// Shared test helper: every record round-trips and every strict prefix of its
/// encoding is rejected as short (or invalid), never accepted and never a panic.
#[cfg(test)]
pub(crate) fn assert_round_trip<R: Record + PartialEq + std::fmt::Debug>(r: &R) {
    let bytes = r.to_bytes();
    assert_eq!(&R::decode(&bytes).expect("decodes"), r);
    for cut in 0..bytes.len() {
        assert!(
            R::decode(&bytes[..cut]).is_err(),
            "prefix of {cut} bytes decoded: {r:?}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_emptied_buffer_keeps_a_small_capacity_and_lets_a_large_one_go() {
        let mut small = BytesMut::with_capacity(4 * 1024);
        let_go_if_large(&mut small);
        assert_eq!(small.capacity(), 4 * 1024);
        let mut large = BytesMut::with_capacity(1024 * 1024);
        large.extend_from_slice(&[1; 10]);
        let_go_if_large(&mut large);
        assert!(large.capacity() >= 1024 * 1024, "a buffer in use is kept");
        large.clear();
        let_go_if_large(&mut large);
        assert_eq!(large.capacity(), 0);
    }

    #[test]
    fn frames_split_only_when_whole() {
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&[0, 0, 0, 3, 1, 2]);
        assert_eq!(split_frame(&mut buf, 10).unwrap(), None);
        buf.extend_from_slice(&[3, 9]);
        assert_eq!(
            split_frame(&mut buf, 10).unwrap().unwrap(),
            Bytes::from_static(&[1, 2, 3])
        );
        assert_eq!(&buf[..], &[9]);
    }

    #[test]
    fn an_arena_frames_like_framed_and_reuses_its_chunk_once_the_frames_are_gone() {
        let mut arena = Arena::default();
        let body = |n: usize| move |b: &mut BytesMut| b.extend_from_slice(&vec![7; n]);
        let a = arena.framed(body(10));
        assert_eq!(a, framed(10, body(10)));
        // The next frame follows in the same chunk.
        let b = arena.framed(body(20));
        assert_eq!(b, framed(20, body(20)));
        assert_eq!(b.as_ptr(), a[a.len()..].as_ptr());
        let first = a.as_ptr();
        // Fill the chunk past its last frame's room: a new chunk, while
        // frames of the old one are alive.
        let held: Vec<Bytes> = (0..ARENA_CHUNK / 100)
            .map(|_| arena.framed(body(96)))
            .collect();
        let c = arena.framed(body(600));
        let in_first = |f: &Bytes| {
            let at = f.as_ptr() as usize;
            at >= first as usize && at < first as usize + ARENA_CHUNK
        };
        assert!(!in_first(&c), "a live chunk is not written over");
        drop((a, b, held, c));
        // Frames dropped as soon as they are made, as a connection's are
        // once copied to its socket buffer: the chunk is taken back and
        // written from its start again, never a new one.
        let base = arena.framed(body(1));
        let start = base.as_ptr() as usize;
        drop(base);
        for i in 0..3 * ARENA_CHUNK / 100 {
            let f = arena.framed(body(96));
            assert_eq!(f, framed(96, body(96)));
            let at = f.as_ptr() as usize;
            assert!(
                at >= start - ARENA_CHUNK && at + f.len() <= start + ARENA_CHUNK,
                "frame {i} outside the reused chunk"
            );
        }
        // A frame larger than a chunk: its own buffer, not kept after it.
        let big = arena.framed(body(3 * ARENA_CHUNK));
        assert_eq!(big, framed(3 * ARENA_CHUNK, body(3 * ARENA_CHUNK)));
        drop(big);
        let _ = arena.framed(body(1));
        assert!(arena.buf.capacity() <= 2 * ARENA_CHUNK);
    }

    #[test]
    fn oversize_and_negative_lengths_are_frame_errors() {
        let mut buf = BytesMut::from(&[0x7f, 0xff, 0xff, 0xff][..]);
        assert!(split_frame(&mut buf, DEFAULT_MAX_PACKET).is_err());
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xfe][..]);
        assert!(split_frame(&mut buf, DEFAULT_MAX_PACKET).is_err());
        let mut buf = BytesMut::from(&[0, 0x10, 0, 0][..]);
        assert!(
            split_frame(&mut buf, DEFAULT_MAX_PACKET).is_err(),
            "0x100000 is one past jute.maxbuffer"
        );
        let mut buf = BytesMut::from(&[0, 0x0f, 0xff, 0xff][..]);
        assert_eq!(split_frame(&mut buf, DEFAULT_MAX_PACKET).unwrap(), None);
    }
}
