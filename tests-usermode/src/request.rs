//! The upper request of the user-mode hosts: an owned buffer and a completion callback.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::BytesMut;
use vcdirect::platform::{BufOrigin, IoBuf, Paging, RequestKind, UpperRequest};
use vcdirect::Status;

/// What a fresh read buffer holds before the read: a byte pattern no test volume or medium
/// holds, so a read that leaves the buffer (or part of it) as it was cannot pass for one that
/// returned the expected bytes.
pub const UNREAD: u8 = 0xA5;

/// A caller's buffer: owned, splittable into disjoint owned pieces and joined back. Its origin
/// (as the kernel's names the upper IRP's MDL) is the address of the first byte of the buffer
/// it was made as, and the piece's offset from there.
///
/// Like an IRP's MDL it must be mapped (`IoBuf::map`) before the engine reads or writes it
/// (docs/review.md W7); `bytes` on an unmapped buffer panics, so an engine path that forgot
/// the step fails every test that reaches it. [`Buf::fail_mapping`] is the mapping-failure
/// switch (system-PTE pressure in the kernel).
#[derive(Debug)]
pub struct Buf {
    bytes: BytesMut,
    /// Address of the first byte of the buffer this one was made as (its origin's descriptor).
    base: usize,
    mapped: bool,
    map_fails: bool,
}

impl Buf {
    fn new(bytes: BytesMut) -> Self {
        Buf {
            base: bytes.as_ptr() as usize,
            bytes,
            mapped: false,
            map_fails: false,
        }
    }

    /// `len` zero bytes whose first byte is aligned to `align` (a power of two).
    pub fn zeroed_aligned(len: usize, align: usize) -> Self {
        let mut b = BytesMut::zeroed(len + align);
        let pad = (align - (b.as_ptr() as usize) % align) % align;
        let _ = b.split_to(pad);
        b.truncate(len);
        Buf::new(b)
    }

    /// Fault switch (W7): every `map` of this buffer fails with STATUS_INSUFFICIENT_RESOURCES,
    /// as MmGetSystemAddressForMdlSafe returns NULL when system PTEs run out.
    pub fn fail_mapping(mut self) -> Self {
        self.map_fails = true;
        self
    }

    /// True once the engine mapped the buffer.
    pub fn was_mapped(&self) -> bool {
        self.mapped
    }

    /// `len` bytes of [`UNREAD`] whose first byte is aligned to `align`: a fresh read buffer,
    /// every byte of which a successful read must overwrite.
    pub fn unread_aligned(len: usize, align: usize) -> Self {
        let mut b = Self::zeroed_aligned(len, align);
        b.bytes.fill(UNREAD);
        b
    }

    /// A page-aligned buffer holding a copy of `data`.
    pub fn from_slice(data: &[u8]) -> Self {
        let mut b = Self::zeroed_aligned(data.len(), 4096);
        b.bytes.copy_from_slice(data);
        b
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes
    }

    /// The bytes, mutable (the issuer's view: no mapping needed).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

impl IoBuf for Buf {
    fn map(&mut self) -> Result<&mut [u8], Status> {
        if self.map_fails {
            return Err(Status::InsufficientResources);
        }
        self.mapped = true;
        Ok(&mut self.bytes)
    }
    fn bytes(&mut self) -> &mut [u8] {
        assert!(
            self.mapped,
            "the engine used a caller buffer it had not mapped (W7)"
        );
        &mut self.bytes
    }
    fn len(&self) -> usize {
        self.bytes.len()
    }
    fn split_to(&mut self, at: usize) -> Self {
        Buf {
            bytes: self.bytes.split_to(at),
            base: self.base,
            mapped: self.mapped,
            map_fails: self.map_fails,
        }
    }
    fn unsplit(&mut self, next: Self) {
        self.bytes.unsplit(next.bytes)
    }
    fn address(&self) -> usize {
        self.bytes.as_ptr() as usize
    }
    fn origin(&self) -> Option<BufOrigin> {
        Some(BufOrigin {
            descriptor: self.base,
            offset: self.address() - self.base,
        })
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

/// The issuer's side of a request's cancellation, as `IoCancelIrp` sees an IRP: a cancel flag
/// (`Irp->Cancel`) and the engine's hook (`Irp->CancelRoutine`), exchanged atomically.
#[derive(Clone, Debug)]
pub struct CancelHandle(Arc<CancelState>);

#[derive(Debug)]
struct CancelState {
    key: usize,
    cancelled: AtomicBool,
    armed: AtomicBool,
}

/// Keys of test requests: unique in the process, like the address of an outstanding IRP.
static NEXT_KEY: AtomicUsize = AtomicUsize::new(1);

impl CancelHandle {
    fn new() -> Self {
        CancelHandle(Arc::new(CancelState {
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
            cancelled: AtomicBool::new(false),
            armed: AtomicBool::new(false),
        }))
    }

    /// Cancels the request as `IoCancelIrp` does: sets its cancel flag, then, if the engine's
    /// hook was armed, takes it and runs `routine` with the request's key (the cancel routine,
    /// which calls `Volume::cancel`). True when the routine ran.
    pub fn cancel(&self, routine: impl FnOnce(usize)) -> bool {
        self.0.cancelled.store(true, Ordering::SeqCst);
        if self.0.armed.swap(false, Ordering::SeqCst) {
            routine(self.0.key);
            true
        } else {
            false
        }
    }

    /// The request's key.
    pub fn key(&self) -> usize {
        self.0.key
    }
}

/// A request as an upper driver would send it.
pub struct TestRequest {
    kind: RequestKind,
    offset: i64,
    length: u32,
    buf: Option<Buf>,
    cancel: CancelHandle,
    done: Option<Callback>,
    paging: Paging,
    priority: Option<u8>,
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
            cancel: CancelHandle::new(),
            done: Some(Box::new(done)),
            paging: Paging::No,
            priority: None,
        }
    }

    /// The same request as paging I/O of the given kind (IRP_PAGING_IO, with or without
    /// IRP_SYNCHRONOUS_PAGING_IO, in the kernel).
    pub fn with_paging(mut self, paging: Paging) -> Self {
        self.paging = paging;
        self
    }

    /// The same request with an I/O priority hint (IoSetIoPriorityHint in the kernel).
    pub fn with_priority_hint(mut self, hint: u8) -> Self {
        self.priority = Some(hint);
        self
    }

    /// A read of `length` bytes at `offset` into a fresh aligned buffer of [`UNREAD`] bytes.
    pub fn read(offset: u64, length: u32, done: impl FnOnce(Completion) + Send + 'static) -> Self {
        Self::new(
            RequestKind::Read,
            offset as i64,
            length,
            Some(Buf::unread_aligned(length as usize, 4096)),
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

    /// The handle that cancels the request.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
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
        self.cancel.0.cancelled.load(Ordering::SeqCst)
    }
    fn paging(&self) -> Paging {
        self.paging
    }
    fn priority_hint(&self) -> Option<u8> {
        self.priority
    }
    fn cancel_key(&self) -> usize {
        self.cancel.0.key
    }
    fn arm_cancel(&mut self) -> bool {
        let c = &self.cancel.0;
        c.armed.store(true, Ordering::SeqCst);
        // Cancelled before the hook was in place: take it back unless the canceller already
        // took it (then its routine runs and settles the request with the engine).
        !(c.cancelled.load(Ordering::SeqCst) && c.armed.swap(false, Ordering::SeqCst))
    }
    fn disarm_cancel(&mut self) -> bool {
        self.cancel.0.armed.swap(false, Ordering::SeqCst)
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
