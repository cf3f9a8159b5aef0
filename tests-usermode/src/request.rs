//! The upper request of the user-mode hosts: an owned buffer and a completion callback.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bytes::BytesMut;
use vcdirect::platform::{
    BufOrigin, IoBuf, LinkedRequests, RequestKind, RequestLinks, RequestList, RequestNote,
    UpperRequest,
};
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
    /// MmGetSystemAddressForMdlSafe: checks the W9 row (the engine maps only on its own
    /// threads, at PASSIVE_LEVEL, docs/review.md W7).
    #[track_caller]
    fn map(&mut self) -> Result<&mut [u8], Status> {
        crate::irql::check(vcdirect::platform::irql::Call::MapMdl);
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

struct CancelState {
    key: usize,
    cancelled: AtomicBool,
    armed: AtomicBool,
    /// The in-line flag (as the kernel keeps it in the IRP's DriverContext): set while the
    /// request is linked in a keyed [`TestRequestList`]. Set and cleared under that list's
    /// lock by the engine's [`LinkedRequests`]; read by `remove_key` through the key alone
    /// ([`KEYS`]).
    in_line: AtomicBool,
    /// The key of the request linked after this one (the IRP's Flink), 0: none.
    next: AtomicUsize,
    /// The key of the request linked before this one (the IRP's Blink), 0: none.
    prev: AtomicUsize,
    /// The request itself while a list holds it (the list owns it, as an IRP is owned by the
    /// list it is linked in): its block, allocated by its issuer, so a waiting request costs
    /// the engine no allocation.
    parked: Mutex<Option<TestRequest>>,
}

impl std::fmt::Debug for CancelState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelState")
            .field("key", &self.key)
            .field("cancelled", &self.cancelled)
            .field("armed", &self.armed)
            .finish_non_exhaustive()
    }
}

/// Keys of test requests: unique in the process, like the address of an outstanding IRP.
static NEXT_KEY: AtomicUsize = AtomicUsize::new(1);

/// Every live request's cancel state by key: what the kernel reaches through the IRP's address
/// (the key), so a keyed list reads a request's in-line flag without a search. Filled as a
/// request is made (by its issuer, before dispatch: the engine allocates nothing for it) and
/// emptied as its state goes.
static KEYS: Mutex<BTreeMap<usize, Weak<CancelState>>> = Mutex::new(BTreeMap::new());

fn keys() -> std::sync::MutexGuard<'static, BTreeMap<usize, Weak<CancelState>>> {
    KEYS.lock().unwrap_or_else(|e| e.into_inner())
}

impl Drop for CancelState {
    fn drop(&mut self) {
        keys().remove(&self.key);
    }
}

impl CancelHandle {
    fn new() -> Self {
        let state = Arc::new(CancelState {
            key: NEXT_KEY.fetch_add(1, Ordering::Relaxed),
            cancelled: AtomicBool::new(false),
            armed: AtomicBool::new(false),
            in_line: AtomicBool::new(false),
            next: AtomicUsize::new(0),
            prev: AtomicUsize::new(0),
            parked: Mutex::new(None),
        });
        keys().insert(state.key, Arc::downgrade(&state));
        CancelHandle(state)
    }

    /// Cancels the request as `IoCancelIrp` does: sets its cancel flag, then, if the engine's
    /// hook was armed, takes it and runs `routine` with the request's key (the cancel routine,
    /// which calls `Volume::cancel`). True when the routine ran. The routine runs at
    /// DISPATCH_LEVEL, as IoCancelIrp calls it holding the cancel spin lock (W9).
    pub fn cancel(&self, routine: impl FnOnce(usize)) -> bool {
        self.0.cancelled.store(true, Ordering::SeqCst);
        if self.0.armed.swap(false, Ordering::SeqCst) {
            let key = self.0.key;
            crate::irql::raised(vcdirect::platform::irql::Irql::Dispatch, || routine(key));
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

/// A request as an upper driver would send it. Like an IRP, it lives in one block allocated
/// by its issuer, which also holds the link the engine's queues chain it by
/// ([`TestRequestList`]): a waiting request costs the engine no allocation.
pub struct TestRequest(Box<Inner>);

struct Inner {
    kind: RequestKind,
    offset: i64,
    length: u32,
    buf: Option<Buf>,
    cancel: CancelHandle,
    done: Option<Callback>,
    priority: Option<u8>,
    /// Paging I/O (IRP_PAGING_IO in the kernel).
    paging: bool,
    note: RequestNote,
    /// After the first `offset()` and the first `length()`, these are answered instead (a
    /// system buffer rewritten while the request waits): `with_range_moved_after_dispatch`.
    moved: Option<(i64, u32)>,
    offset_asked: AtomicBool,
    length_asked: AtomicBool,
}

/// A FIFO of test requests linked through the requests themselves: no allocation, never full.
/// The link logic is the engine's ([`LinkedRequests`], the one the kernel's IRP lists run):
/// this host gives it each request's links and in-line flag by the request's key
/// (`TestLinks`, through `KEYS`, as the kernel reaches an IRP's by its address), so the
/// tests and loom models run the kernel's push, pop, search and constant-time unlink by key,
/// with its neighbour check. A request the list holds waits in its own cancel state
/// (`parked`). What the engine asks the lists is counted per thread ([`list_steps`]).
///
/// A keyed list ([`RequestList::new_keyed`]) keeps each request's in-line flag as the kernel's
/// does: set on push, cleared on pop and remove (the fault switch `VerifyCancelStaleFlag`
/// leaves it set on pop); a push on any list clears it first, as the kernel's `park` rewrites
/// the IRP's context. `remove_key` believes the flag only once the request's neighbours link
/// it: a flag on a request no longer in the line panics with
/// [`STALE_UNLINK`](vcdirect::platform::STALE_UNLINK).
pub struct TestRequestList {
    line: LinkedRequests<usize>,
}

impl Default for TestRequestList {
    fn default() -> Self {
        TestRequestList {
            line: LinkedRequests::new(false),
        }
    }
}

std::thread_local! {
    /// Requests a search looked at on this thread (`remove_first`'s `pick` calls: the
    /// engine's search by predicate, a step per request before the one it takes), and the
    /// requests asked for by key (`remove_key` calls). Per thread: a cancel routine runs on
    /// its issuer's thread, and tests run side by side.
    static STEPS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// (requests looked at by `remove_first` searches, `remove_key` calls) so far on this thread.
pub fn list_steps() -> (u64, u64) {
    STEPS.with(Cell::get)
}

fn count_step(pick: u64, keyed: u64) {
    STEPS.with(|s| {
        let (p, k) = s.get();
        s.set((p + pick, k + keyed));
    });
}

/// The cancel state of the live request `key` (what the kernel reaches through an IRP's
/// address), `None` once it is gone.
fn state(key: usize) -> Option<Arc<CancelState>> {
    keys().get(&key).and_then(Weak::upgrade)
}

fn key_of(link: usize) -> Option<usize> {
    (link != 0).then_some(link)
}

/// The links and in-line flag of test requests by key, for the engine's [`LinkedRequests`]. A
/// key of a request that is gone has no links and no flag (writes to it are dropped): the
/// kernel would read freed memory there.
struct TestLinks;

impl RequestLinks for TestLinks {
    type Node = usize;

    fn next(&self, key: usize) -> Option<usize> {
        state(key).and_then(|s| key_of(s.next.load(Ordering::SeqCst)))
    }
    fn set_next(&self, key: usize, next: Option<usize>) {
        if let Some(s) = state(key) {
            s.next.store(next.unwrap_or(0), Ordering::SeqCst);
        }
    }
    fn prev(&self, key: usize) -> Option<usize> {
        state(key).and_then(|s| key_of(s.prev.load(Ordering::SeqCst)))
    }
    fn set_prev(&self, key: usize, prev: Option<usize>) {
        if let Some(s) = state(key) {
            s.prev.store(prev.unwrap_or(0), Ordering::SeqCst);
        }
    }
    fn in_line(&self, key: usize) -> bool {
        state(key).is_some_and(|s| s.in_line.load(Ordering::SeqCst))
    }
    fn set_in_line(&self, key: usize, on: bool) {
        if let Some(s) = state(key) {
            s.in_line.store(on, Ordering::SeqCst);
        }
    }
}

fn parked(state: &CancelState) -> std::sync::MutexGuard<'_, Option<TestRequest>> {
    state.parked.lock().unwrap_or_else(|e| e.into_inner())
}

impl TestRequestList {
    /// Parks `request` in its cancel state for a list (as the kernel's `park`: the context is
    /// rewritten without the in-line flag); its key, which links it.
    fn park(request: TestRequest) -> usize {
        let state = Arc::clone(&request.0.cancel.0);
        state.in_line.store(false, Ordering::SeqCst);
        let key = state.key;
        let previous = parked(&state).replace(request);
        assert!(previous.is_none(), "request {key} pushed on two lists");
        key
    }

    /// Takes back the request `key` the engine's list just unlinked.
    fn unpark(key: usize) -> TestRequest {
        let request = state(key).and_then(|s| parked(&s).take());
        match request {
            Some(request) => request,
            None => panic!("request {key} was unlinked from a list that did not hold it"),
        }
    }
}

impl RequestList<TestRequest> for TestRequestList {
    fn new() -> Self {
        TestRequestList::default()
    }

    fn new_keyed() -> Self {
        TestRequestList {
            line: LinkedRequests::new(true),
        }
    }

    fn push_back(&mut self, request: TestRequest) {
        let key = Self::park(request);
        self.line.push_back(&TestLinks, key);
    }

    fn push_front(&mut self, request: TestRequest) {
        let key = Self::park(request);
        self.line.push_front(&TestLinks, key);
    }

    fn pop_front(&mut self) -> Option<TestRequest> {
        let key = self.line.pop_front(&TestLinks)?;
        Some(Self::unpark(key))
    }

    fn pop_front_if(&mut self, pick: &mut dyn FnMut(&TestRequest) -> bool) -> Option<TestRequest> {
        let key = self.line.head()?;
        let Some(state) = state(key) else {
            panic!("request {key} is linked in a list but gone");
        };
        let picked = match parked(&state).as_ref() {
            Some(request) => pick(request),
            None => panic!("request {key} is linked in a list that does not hold it"),
        };
        if !picked {
            return None;
        }
        self.pop_front()
    }

    fn remove_first(&mut self, pick: &mut dyn FnMut(&TestRequest) -> bool) -> Option<TestRequest> {
        let key = self.line.remove_first(&TestLinks, |key| {
            count_step(1, 0);
            let Some(state) = state(key) else {
                panic!("request {key} is linked in a list but gone");
            };
            let request = parked(&state);
            match request.as_ref() {
                Some(request) => pick(request),
                None => panic!("request {key} is linked in a list that does not hold it"),
            }
        })?;
        Some(Self::unpark(key))
    }

    fn remove_key(&mut self, key: usize) -> Option<TestRequest> {
        count_step(0, 1);
        let key = self.line.remove_key(&TestLinks, key)?;
        Some(Self::unpark(key))
    }

    fn len(&self) -> usize {
        self.line.len()
    }
}

impl Drop for TestRequestList {
    fn drop(&mut self) {
        // A request still linked is lost, which its own drop reports.
        while let Some(request) = self.pop_front() {
            drop(request);
        }
    }
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
        TestRequest(Box::new(Inner {
            kind,
            offset,
            length,
            buf,
            cancel: CancelHandle::new(),
            done: Some(Box::new(done)),
            priority: None,
            paging: false,
            note: RequestNote::default(),
            moved: None,
            offset_asked: AtomicBool::new(false),
            length_asked: AtomicBool::new(false),
        }))
    }

    /// The same request with an I/O priority hint (IoSetIoPriorityHint in the kernel).
    pub fn with_priority_hint(mut self, hint: u8) -> Self {
        self.0.priority = Some(hint);
        self
    }

    /// The same request whose `offset()` and `length()` give `offset` and `length` once each
    /// has been asked (as a VERIFY's system buffer rewritten after dispatch would): the engine
    /// must serve the range it validated, never ask again.
    pub fn with_range_moved_after_dispatch(mut self, offset: i64, length: u32) -> Self {
        self.0.moved = Some((offset, length));
        self
    }

    /// The same request marked as paging I/O (IRP_PAGING_IO in the kernel).
    pub fn as_paging_io(mut self) -> Self {
        self.0.paging = true;
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

    /// An IOCTL_DISK_VERIFY of `length` bytes at `offset` (its VERIFY_INFORMATION, as the glue
    /// reads it from the system buffer): no buffer.
    pub fn verify(
        offset: i64,
        length: u32,
        done: impl FnOnce(Completion) + Send + 'static,
    ) -> Self {
        Self::new(RequestKind::Verify, offset, length, None, done)
    }

    /// The handle that cancels the request.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.0.cancel.clone()
    }
}

impl UpperRequest for TestRequest {
    type Buf = Buf;
    type List = TestRequestList;

    fn note(&self) -> RequestNote {
        self.0.note
    }
    fn set_note(&mut self, note: RequestNote) {
        self.0.note = note;
    }
    fn kind(&self) -> RequestKind {
        self.0.kind
    }
    fn offset(&self) -> i64 {
        match self.0.moved {
            Some((offset, _)) if self.0.offset_asked.swap(true, Ordering::SeqCst) => offset,
            _ => self.0.offset,
        }
    }
    fn length(&self) -> u32 {
        match self.0.moved {
            Some((_, length)) if self.0.length_asked.swap(true, Ordering::SeqCst) => length,
            _ => self.0.length,
        }
    }
    fn take_buffer(&mut self) -> Option<Buf> {
        self.0.buf.take()
    }
    fn put_buffer(&mut self, buf: Buf) {
        self.0.buf = Some(buf);
    }
    fn is_cancelled(&self) -> bool {
        self.0.cancel.0.cancelled.load(Ordering::SeqCst)
    }
    fn priority_hint(&self) -> Option<u8> {
        self.0.priority
    }
    fn is_paging_io(&self) -> bool {
        self.0.paging
    }
    fn cancel_key(&self) -> usize {
        self.0.cancel.0.key
    }
    fn arm_cancel(&mut self) -> bool {
        let c = &self.0.cancel.0;
        c.armed.store(true, Ordering::SeqCst);
        // Cancelled before the hook was in place: take it back unless the canceller already
        // took it (then its routine runs and settles the request with the engine).
        !(c.cancelled.load(Ordering::SeqCst) && c.armed.swap(false, Ordering::SeqCst))
    }
    fn disarm_cancel(&mut self) -> bool {
        self.0.cancel.0.armed.swap(false, Ordering::SeqCst)
    }
    fn complete(mut self, status: Status, information: usize) {
        let done = self.0.done.take().expect("completed once");
        done(Completion {
            status,
            information,
            buf: self.0.buf.take(),
        });
    }
}

impl Drop for TestRequest {
    fn drop(&mut self) {
        // A request dropped without completion is a lost request: fail loudly in tests.
        if self.0.done.is_some() && !std::thread::panicking() {
            panic!("an upper request was dropped without being completed");
        }
    }
}
