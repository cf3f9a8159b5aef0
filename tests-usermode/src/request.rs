//! The upper request of the user-mode hosts: an owned buffer and a completion callback.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use vcdirect::platform::{IoBuf, RequestKind, UpperRequest};
use vcdirect::Status;

/// A caller's buffer: owned, splittable into disjoint owned pieces and joined back.
#[derive(Debug)]
pub struct Buf(BytesMut);

impl Buf {
    /// `len` zero bytes whose first byte is aligned to `align` (a power of two).
    pub fn zeroed_aligned(len: usize, align: usize) -> Self {
        let mut b = BytesMut::zeroed(len + align);
        let pad = (align - (b.as_ptr() as usize) % align) % align;
        let _ = b.split_to(pad);
        b.truncate(len);
        Buf(b)
    }

    /// A page-aligned buffer holding a copy of `data`.
    pub fn from_slice(data: &[u8]) -> Self {
        let mut b = Self::zeroed_aligned(data.len(), 4096);
        b.0.copy_from_slice(data);
        b
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.0
    }

    /// The bytes, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl IoBuf for Buf {
    fn bytes(&mut self) -> &mut [u8] {
        &mut self.0
    }
    fn len(&self) -> usize {
        self.0.len()
    }
    fn split_to(&mut self, at: usize) -> Self {
        Buf(self.0.split_to(at))
    }
    fn unsplit(&mut self, next: Self) {
        self.0.unsplit(next.0)
    }
    fn address(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

/// What a request's issuer learns when it completes.
#[derive(Debug)]
pub struct Completion {
    /// Final status.
    pub status: Status,
    /// Bytes transferred.
    pub information: usize,
    /// The buffer, handed back.
    pub buf: Option<Buf>,
}

type Callback = Box<dyn FnOnce(Completion) + Send>;

/// A request as an upper driver would send it.
pub struct TestRequest {
    kind: RequestKind,
    offset: i64,
    length: u32,
    buf: Option<Buf>,
    cancelled: Arc<AtomicBool>,
    done: Option<Callback>,
}

impl TestRequest {
    /// A request; `done` runs exactly once, when it completes.
    pub fn new(
        kind: RequestKind,
        offset: i64,
        length: u32,
        buf: Option<Buf>,
        done: impl FnOnce(Completion) + Send + 'static,
    ) -> Self {
        TestRequest {
            kind,
            offset,
            length,
            buf,
            cancelled: Arc::new(AtomicBool::new(false)),
            done: Some(Box::new(done)),
        }
    }

    /// A read of `length` bytes at `offset` into a fresh aligned buffer.
    pub fn read(offset: u64, length: u32, done: impl FnOnce(Completion) + Send + 'static) -> Self {
        Self::new(
            RequestKind::Read,
            offset as i64,
            length,
            Some(Buf::zeroed_aligned(length as usize, 4096)),
            done,
        )
    }

    /// A write of `data` at `offset`.
    pub fn write(offset: u64, data: &[u8], done: impl FnOnce(Completion) + Send + 'static) -> Self {
        Self::new(
            RequestKind::Write,
            offset as i64,
            data.len() as u32,
            Some(Buf::from_slice(data)),
            done,
        )
    }

    /// A flush.
    pub fn flush(done: impl FnOnce(Completion) + Send + 'static) -> Self {
        Self::new(RequestKind::Flush, 0, 0, None, done)
    }

    /// A handle that cancels the request when set.
    pub fn cancel_handle(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancelled)
    }
}

impl UpperRequest for TestRequest {
    type Buf = Buf;

    fn kind(&self) -> RequestKind {
        self.kind
    }
    fn offset(&self) -> i64 {
        self.offset
    }
    fn length(&self) -> u32 {
        self.length
    }
    fn take_buffer(&mut self) -> Option<Buf> {
        self.buf.take()
    }
    fn put_buffer(&mut self, buf: Buf) {
        self.buf = Some(buf);
    }
    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }
    fn complete(mut self, status: Status, information: usize) {
        let done = self.done.take().expect("completed once");
        done(Completion {
            status,
            information,
            buf: self.buf.take(),
        });
    }
}

impl Drop for TestRequest {
    fn drop(&mut self) {
        // A request dropped without completion is a lost request: fail loudly in tests.
        if self.done.is_some() && !std::thread::panicking() {
            panic!("an upper request was dropped without being completed");
        }
    }
}
