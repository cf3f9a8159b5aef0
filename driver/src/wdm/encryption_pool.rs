//! The kernel's encryption thread pool: `Platform::run_pieces` (VeraCrypt's
//! EncryptionThreadPool).
//!
//! Owns: one pool per driver, started in DriverEntry with (CPUs - `VeraCryptEncryptionFreeCpuCount`)
//! system threads, sized as VeraCrypt sizes its pool (`crypto::encryption_threads`: none below 2,
//! at most 64, or 256 with more than one processor group, each thread then bound to its group
//! with KeSetSystemGroupAffinityThread), as VeraCrypt starts its pool at load, and stopped and
//! joined in Unload after every volume was dismounted. A caller of `run` hands its pieces to
//! the pool, runs every piece of its own that no thread has taken yet, and waits until every
//! piece is done; the batch that describes them (pieces, work, countdown, completion event)
//! lives on the caller's stack and is linked into the pool's list of batches, so nothing is
//! allocated per fragment, and no queue can be full.
//! Never: splits buffers (`crypto::CryptoPool` does) or runs at raised IRQL: pieces run on the
//! pool's threads and the caller's at PASSIVE_LEVEL, and `run` waits at PASSIVE_LEVEL.
//!
//! Priorities (W8): the threads wait at the default priority, as VeraCrypt's encryption threads
//! do, and run a piece at LOW_REALTIME_PRIORITY; VeraCrypt's run at 8. `run`'s callers are
//! at that priority (a precondition: the engine's threads that do crypto are raised whenever
//! the pool has threads, `ThreadRole::low_realtime`; only the Wine self-test's caller is not).
//! So a caller never waits for a piece nobody runs (it runs those itself) nor for one held by
//! a thread of lower priority than its own.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::ptr::NonNull;
use core::sync::atomic::{fence, AtomicPtr, AtomicU64, AtomicUsize, Ordering};

use wdk_sys::ntddk::{
    KeInitializeEvent, KeQueryActiveProcessorCountEx, KeSetEvent, KeWaitForSingleObject,
};
use wdk_sys::{
    _EVENT_TYPE::NotificationEvent, _KWAIT_REASON::Executive, _MODE::KernelMode, KEVENT,
};

use super::pool::try_box;
use super::sync::{KernelSemaphore, SpinLock};
use super::thread::SystemThread;
use crate::platform::{Lock, Piece, Semaphore, Thread};

/// The work every piece of a batch runs.
type Work<'a> = dyn Fn(&mut Piece<'_>) + Sync + 'a;

/// One caller's pieces, on the caller's stack while it waits (it does not move: it is
/// initialized in place and only borrowed until `run` returns).
struct Batch {
    /// The caller's pieces (lifetime erased: valid until the caller returns, which it does only
    /// after `remaining` reached 0).
    pieces: *mut Piece<'static>,
    count: usize,
    /// The caller's `&Work`, as a pointer to that reference (on the caller's stack too).
    work: *const &'static Work<'static>,
    /// Pieces not yet taken by a thread (guarded by the pool's lock).
    next: UnsafeCell<usize>,
    /// The next batch in the pool's list (guarded by the pool's lock).
    link: UnsafeCell<*const Batch>,
    /// Pieces not yet finished; the thread that finishes the last sets `done`.
    remaining: AtomicUsize,
    /// Notification event the caller waits on (kernel-mode wait: the stack stays resident).
    done: UnsafeCell<KEVENT>,
}

/// The pool's list of batches with pieces not yet taken, oldest first.
struct Batches {
    head: *const Batch,
    tail: *const Batch,
    /// Set by `stop` (under the lock): no batch is accepted afterwards.
    stopping: bool,
}

// SAFETY: the list's pointers are only followed under the pool's spin lock, and every batch in
// it stays alive until its caller's `run` returns, which is after it left the list.
unsafe impl Send for Batches {}

/// What the pool's threads share with callers.
struct Shared {
    batches: SpinLock<Batches>,
    /// Wake-ups for the threads: a caller posts one per piece but one (it runs pieces too),
    /// never more than there are threads waiting for none (`wakes`), since a permit is only a
    /// hint (the caller runs every piece no thread took); plus one per thread at stop. A
    /// thread that finds no piece for its permit goes back to waiting.
    ready: KernelSemaphore,
    /// Permits released and not yet taken by a thread.
    wakes: AtomicUsize,
    /// Pieces run by the pool's threads so far, not the callers' (the self-test reads it).
    pieces_run: AtomicU64,
}

/// The pool's one allocation: what its threads and callers share, and the threads.
struct Inner {
    /// Handles ([`EncryptionPool`]) alive, including one per running pool thread.
    refs: AtomicUsize,
    shared: Shared,
    threads: SpinLock<Vec<SystemThread>>,
}

/// A handle of the driver's encryption pool: a counted reference (`Arc` without its infallible
/// allocation: W6, the pool is made in DriverEntry, where a failed allocation must leave the
/// driver without a pool, never bugcheck). Cloning and dropping allocate nothing.
///
/// IRQL: `start`, `run` and `stop` at PASSIVE_LEVEL.
pub struct EncryptionPool {
    inner: NonNull<Inner>,
}

// SAFETY: `Inner` is shared through atomics, spin locks and a kernel semaphore, all usable from
// any thread; the count keeps it alive while any handle exists.
unsafe impl Send for EncryptionPool {}
// SAFETY: as above.
unsafe impl Sync for EncryptionPool {}

impl Clone for EncryptionPool {
    fn clone(&self) -> Self {
        self.inner().refs.fetch_add(1, Ordering::Relaxed);
        EncryptionPool { inner: self.inner }
    }
}

impl Drop for EncryptionPool {
    fn drop(&mut self) {
        if self.inner().refs.fetch_sub(1, Ordering::Release) == 1 {
            fence(Ordering::Acquire);
            // SAFETY: the last handle: `inner` came from `try_box` in `start` and nothing else
            // refers to it any more.
            drop(unsafe { Box::from_raw(self.inner.as_ptr()) });
        }
    }
}

/// The pool started by DriverEntry (one handle leaked into the pointer), or null.
static POOL: AtomicPtr<Inner> = AtomicPtr::new(core::ptr::null_mut());

impl EncryptionPool {
    fn inner(&self) -> &Inner {
        // SAFETY: this handle holds one count, so the block is alive.
        unsafe { self.inner.as_ref() }
    }

    /// Gives up this handle's count into a raw pointer (for [`POOL`]).
    fn into_raw(self) -> *mut Inner {
        let raw = self.inner.as_ptr();
        core::mem::forget(self);
        raw
    }

    /// Starts a pool of `threads` system threads (none when `threads` is 1 or less: every
    /// caller then runs its pieces itself); with more than one processor group, thread `i`
    /// is bound to `crate::crypto::thread_group(i, ..)`. A thread that fails to start leaves a
    /// smaller pool.
    ///
    /// Every allocation is fallible (W6): the pool's block, the semaphore, the thread list and
    /// each thread's start; a failure before the first thread is an error, a later one leaves
    /// the threads started so far.
    pub fn start(threads: usize) -> Result<Self, crate::Status> {
        let groups = Groups::active();
        let mut handles = Vec::new();
        handles
            .try_reserve_exact(threads)
            .map_err(|_| crate::Status::InsufficientResources)?;
        let inner = try_box(Inner {
            refs: AtomicUsize::new(1),
            shared: Shared {
                batches: SpinLock::new(Batches {
                    head: core::ptr::null(),
                    tail: core::ptr::null(),
                    stopping: false,
                }),
                ready: KernelSemaphore::try_new(0)?,
                wakes: AtomicUsize::new(0),
                pieces_run: AtomicU64::new(0),
            },
            threads: SpinLock::new(handles),
        })?;
        let pool = EncryptionPool {
            // The block now belongs to the count (1, this handle).
            inner: NonNull::from(Box::leak(inner)),
        };
        if threads > 1 {
            for index in 0..threads {
                let group = groups.of_thread(index);
                let handle = pool.clone();
                let body = try_box(move || {
                    let previous = group.map(bind_to_group);
                    pool_thread(&handle.inner().shared);
                    if let Some(previous) = previous {
                        revert_group(previous);
                    }
                    drop(handle);
                });
                // A failed allocation drops the body (and its handle) here.
                let Ok(body) = body else { break };
                match SystemThread::spawn(body) {
                    Ok(thread) => pool.inner().threads.with(|t| t.push(thread)),
                    Err(_) => break,
                }
            }
        }
        Ok(pool)
    }

    /// Pieces run by the pool's threads so far (the wine-host self-test reads it).
    #[cfg(feature = "wine-host")]
    pub fn pieces_run(&self) -> u64 {
        self.inner().shared.pieces_run.load(Ordering::Acquire)
    }

    /// Threads in the pool.
    pub fn threads(&self) -> usize {
        self.inner().threads.with(|t| t.len())
    }

    /// Runs `work` on every piece, on the pool's threads and on the caller's (it takes the
    /// pieces no thread has taken yet), and returns when all are done. With one piece, no
    /// thread, or a stopped pool, the caller runs them all itself.
    ///
    /// IRQL: PASSIVE_LEVEL (it waits).
    ///
    /// Inlined into the engine's caller (`CryptoPool::run`), so the caller's own calls of
    /// `work` are direct calls of its closure: the only indirect call of `work` is on the pool's
    /// threads (W13's stack budget follows indirect calls conservatively).
    #[inline(always)]
    pub fn run(&self, pieces: &mut [Piece<'_>], work: &Work<'_>) {
        if pieces.len() <= 1 || self.threads() == 0 {
            return run_inline(pieces, work);
        }
        let work_ref: &Work<'_> = work;
        let batch = Batch {
            pieces: pieces.as_mut_ptr().cast::<Piece<'static>>(),
            count: pieces.len(),
            work: (&raw const work_ref).cast::<&'static Work<'static>>(),
            next: UnsafeCell::new(0),
            link: UnsafeCell::new(core::ptr::null()),
            remaining: AtomicUsize::new(pieces.len()),
            // SAFETY: KEVENT is a plain C struct; all-zero is valid before KeInitializeEvent.
            done: UnsafeCell::new(unsafe { core::mem::zeroed() }),
        };
        // SAFETY: `batch` is a local that does not move until this function returns, which is
        // after every thread is done with it (the wait below).
        unsafe { KeInitializeEvent(batch.done.get(), NotificationEvent, 0) };
        let shared = &self.inner().shared;
        let posted = shared.batches.with(|list| {
            if list.stopping {
                return false;
            }
            let me: *const Batch = &batch;
            if list.tail.is_null() {
                list.head = me;
            } else {
                // SAFETY: the tail is a live batch in the list (its caller still waits).
                let tail = unsafe { &*list.tail };
                // SAFETY: its link is guarded by this lock, which we hold.
                unsafe { *tail.link.get() = me };
            }
            list.tail = me;
            true
        });
        if !posted {
            return run_inline(pieces, work);
        }
        // The caller runs pieces of its own batch too (below), so one permit fewer; and no
        // more than the threads not yet woken can use, so permits never pile up while the
        // threads are kept off the processor.
        let room = self
            .threads()
            .saturating_sub(shared.wakes.load(Ordering::Acquire));
        let wake = (batch.count - 1).min(room);
        shared.wakes.fetch_add(wake, Ordering::AcqRel);
        for _ in 0..wake {
            shared.ready.release();
        }
        // W8: the caller (a LOW_REALTIME_PRIORITY engine thread) never waits for a piece that
        // no thread has started: it takes every piece of its batch not yet taken, then waits
        // only for those the pool's threads are running. (VeraCrypt's caller waits idle; a
        // pool at the default priority could then be starved by real-time threads.)
        let mut last = false;
        while let Some(index) = shared.batches.with(|list| take_piece(list, &batch)) {
            // SAFETY: `index < count`, so inside the caller's slice of pieces.
            let piece = unsafe { batch.pieces.add(index) };
            // SAFETY: piece `index` was handed to this thread alone (taken under the lock).
            let piece = unsafe { &mut *piece };
            work(piece);
            last = batch.remaining.fetch_sub(1, Ordering::AcqRel) == 1;
        }
        if last {
            // Every piece is done, the caller's own last: no thread touches the batch again
            // (the pool's threads touch nothing of it after their own decrement).
            return;
        }
        super::irql::check(crate::platform::irql::Call::Wait);
        // SAFETY: the event initialized above, alive until we return; a kernel-mode,
        // non-alertable wait without timeout at PASSIVE_LEVEL (so this stack stays resident
        // while threads touch the batch). The only result is STATUS_SUCCESS.
        let _ = unsafe {
            KeWaitForSingleObject(
                batch.done.get().cast(),
                Executive,
                KernelMode as i8,
                0,
                core::ptr::null_mut(),
            )
        };
        // Every piece finished and the batch left the list before the last piece was taken;
        // the thread that set the event touches nothing of it afterwards.
    }

    /// Stops the threads and joins them. Nothing is posted afterwards (callers run inline).
    /// Called with no `run` in progress (Unload after every volume was dismounted; the
    /// self-test after its runs): a run whose caller ran pieces itself leaves permits
    /// unused, and one that left fewer could keep a thread from seeing the stop.
    ///
    /// IRQL: PASSIVE_LEVEL.
    pub fn stop(&self) {
        let inner = self.inner();
        inner.shared.batches.with(|list| list.stopping = true);
        let threads = inner.threads.with(core::mem::take);
        inner
            .shared
            .wakes
            .fetch_add(threads.len(), Ordering::AcqRel);
        for _ in 0..threads.len() {
            inner.shared.ready.release();
        }
        for thread in threads {
            thread.join();
        }
    }
}

#[inline(always)]
fn run_inline(pieces: &mut [Piece<'_>], work: &Work<'_>) {
    for piece in pieces {
        work(piece);
    }
}

/// The next piece of `batch` not yet taken (a pool thread's from the head batch, a caller's
/// from its own), or `None` when every piece was taken; the batch leaves the list with its last
/// piece (a caller's may be anywhere in the list: the list holds one batch per waiting caller,
/// so the walk is short). Called under the lock.
fn take_piece(list: &mut Batches, batch: &Batch) -> Option<usize> {
    // SAFETY: `next` and `link` are guarded by the pool's lock, which the caller holds.
    let next = unsafe { &mut *batch.next.get() };
    if *next == batch.count {
        return None;
    }
    let index = *next;
    *next += 1;
    if *next == batch.count {
        let me: *const Batch = batch;
        // SAFETY: as above; the batch is in the list (its last piece was not taken yet).
        let after = unsafe { *batch.link.get() };
        if list.head == me {
            list.head = after;
        } else {
            // `me` is in the list but not its head, so the walk ends at its predecessor.
            let mut at = list.head;
            loop {
                // SAFETY: every batch in the list is alive (its caller waits).
                let link = unsafe { &*at }.link.get();
                // SAFETY: a batch's link is guarded by the pool's lock, which the caller holds.
                let following = unsafe { *link };
                if following == me {
                    // SAFETY: as above.
                    unsafe { *link = after };
                    break;
                }
                at = following;
            }
            if list.tail == me {
                list.tail = at;
            }
        }
        if list.head.is_null() {
            list.tail = core::ptr::null();
        }
    }
    Some(index)
}

/// A pool thread: takes one piece per permit, oldest batch first; a permit without a piece
/// after `stop` ends it.
///
/// Never inlined into its thread's closure: its call of `work` is the pool's one indirect call,
/// which W13's stack budget (scripts/check-sys-image.py, CLOSURE_ONLY) finds by this name.
#[inline(never)]
fn pool_thread(shared: &Shared) {
    // Before any wait, so without a wake-up boost: the priority a piece returns it to.
    let base = super::thread::own_priority();
    loop {
        shared.ready.acquire();
        shared.wakes.fetch_sub(1, Ordering::AcqRel);
        // W8: raised before it takes a piece and until the piece is done, so no caller (an
        // engine thread at LOW_REALTIME_PRIORITY) ever waits for a piece held by a thread of
        // lower priority than its own, which CPU-bound threads could keep off the processor.
        let ran = super::thread::at_low_realtime_priority(base, || run_one(shared));
        if !ran && shared.batches.with(|list| list.stopping) {
            return;
        }
    }
}

/// Takes the oldest batch's next piece and runs it; false when no batch has a piece.
#[inline(always)]
fn run_one(shared: &Shared) -> bool {
    let taken = shared.batches.with(|list| {
        let head = NonNull::new(list.head.cast_mut())?;
        // SAFETY: a batch in the list is alive (its caller waits until every piece is done,
        // and its last piece is not taken yet); `next` and `link` are guarded by this lock.
        let batch = unsafe { head.as_ref() };
        take_piece(list, batch).map(|index| (head, index))
    });
    let Some((batch, index)) = taken else {
        return false;
    };
    // SAFETY: the batch stays alive until its `remaining` reaches 0, which needs this
    // piece; piece `index` was handed to this thread alone (taken under the lock).
    let batch = unsafe { batch.as_ref() };
    // SAFETY: `index < count`, so inside the caller's slice of pieces.
    let piece = unsafe { batch.pieces.add(index) };
    // SAFETY: the caller's pieces outlive the batch; this thread alone was handed piece
    // `index` (taken under the lock), so nothing else references it.
    let piece = unsafe { &mut *piece };
    // SAFETY: the caller's `&Work`, on its stack, outlives the batch.
    let work = unsafe { *batch.work };
    work(piece);
    shared.pieces_run.fetch_add(1, Ordering::AcqRel);
    if batch.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
        // The last piece: wake the caller. After KeSetEvent nothing of the batch is
        // touched (the caller may return at once).
        let done = batch.done.get();
        // SAFETY: the caller's initialized event, alive until it has woken; Wait = FALSE.
        unsafe { KeSetEvent(done, 0, 0) };
    }
    true
}

/// The wine-host self-test of `take_piece`'s unlink, with three batches by hand (no thread, no
/// piece run): a batch leaves the list with its last piece, from the middle, the tail and the
/// head, and the others stay linked in order.
#[cfg(feature = "wine-host")]
pub(crate) fn take_piece_self_test() -> Result<(), &'static str> {
    let batch = |count: usize| Batch {
        pieces: core::ptr::null_mut(),
        count,
        work: core::ptr::null(),
        next: UnsafeCell::new(0),
        link: UnsafeCell::new(core::ptr::null()),
        remaining: AtomicUsize::new(count),
        // SAFETY: KEVENT is a plain C struct; all-zero is valid, and this one is never used.
        done: UnsafeCell::new(unsafe { core::mem::zeroed() }),
    };
    let (a, b, c) = (batch(1), batch(2), batch(1));
    let (pa, pb, pc): (*const Batch, *const Batch, *const Batch) = (&a, &b, &c);
    let link = |x: &Batch| {
        // SAFETY: the batches are this function's locals and nothing else touches them.
        unsafe { *x.link.get() }
    };
    let set_link = |x: &Batch, to: *const Batch| {
        // SAFETY: as above.
        unsafe { *x.link.get() = to };
    };
    set_link(&a, pb);
    set_link(&b, pc);
    let mut list = Batches {
        head: pa,
        tail: pc,
        stopping: false,
    };
    let middle = take_piece(&mut list, &b) == Some(0)
        && link(&a) == pb
        && take_piece(&mut list, &b) == Some(1)
        && take_piece(&mut list, &b).is_none()
        && link(&a) == pc
        && list.head == pa
        && list.tail == pc;
    let tail = take_piece(&mut list, &c) == Some(0) && link(&a).is_null() && list.tail == pa;
    let head = take_piece(&mut list, &a) == Some(0) && list.head.is_null() && list.tail.is_null();
    match (middle, tail, head) {
        (true, true, true) => Ok(()),
        (false, _, _) => Err("encryption pool: a batch leaves the middle of the list"),
        (_, false, _) => Err("encryption pool: a batch leaves the tail of the list"),
        (_, _, false) => Err("encryption pool: a batch leaves the head of the list"),
    }
}

/// The active processor groups (product: KeQueryActiveGroupCount; wine-host: one, because
/// Wine 8.0 exports neither KeSetSystemGroupAffinityThread nor KeRevertToUserGroupAffinityThread,
/// and a missing import stops the image from loading).
#[derive(Clone, Copy)]
struct Groups {
    count: u16,
}

impl Groups {
    /// IRQL: any (the queries have no IRQL restriction).
    fn active() -> Self {
        #[cfg(not(feature = "wine-host"))]
        // SAFETY: no preconditions.
        let count = unsafe { wdk_sys::ntddk::KeQueryActiveGroupCount() }.max(1);
        #[cfg(feature = "wine-host")]
        let count = 1;
        Groups { count }
    }

    /// The group pool thread `index` is bound to, or `None` with one group (no binding).
    fn of_thread(self, index: usize) -> Option<u16> {
        if self.count <= 1 {
            return None;
        }
        let per_group = (0..self.count)
            // SAFETY: no preconditions; `group` is below the active group count.
            .map(|group| unsafe { KeQueryActiveProcessorCountEx(group) } as usize);
        Some(crate::crypto::thread_group(index, per_group))
    }
}

/// Binds the calling pool thread to the active processors of `group` (as VeraCrypt's
/// SetThreadCpuGroupAffinity) and returns the affinity to restore before it ends.
///
/// IRQL: PASSIVE_LEVEL, on the pool thread itself.
#[cfg(not(feature = "wine-host"))]
fn bind_to_group(group: u16) -> wdk_sys::GROUP_AFFINITY {
    use wdk_sys::ntddk::{KeQueryGroupAffinity, KeSetSystemGroupAffinityThread};
    let mut affinity = wdk_sys::GROUP_AFFINITY {
        // SAFETY: no preconditions; `group` is an active group (`Groups::of_thread`). Its
        // active processors, never an empty or foreign mask.
        Mask: unsafe { KeQueryGroupAffinity(group) },
        Group: group,
        Reserved: [0; 3],
    };
    // SAFETY: a plain C struct; all-zero is valid, and the call overwrites it.
    let mut previous: wdk_sys::GROUP_AFFINITY = unsafe { core::mem::zeroed() };
    // SAFETY: IRQL <= APC_LEVEL (PASSIVE_LEVEL on the pool's own system thread); both
    // pointers are valid for the call; the mask is the group's active processors.
    unsafe { KeSetSystemGroupAffinityThread(&mut affinity, &mut previous) };
    previous
}

/// Restores the affinity `bind_to_group` replaced (KeRevertToUserGroupAffinityThread).
#[cfg(not(feature = "wine-host"))]
fn revert_group(mut previous: wdk_sys::GROUP_AFFINITY) {
    // SAFETY: the value KeSetSystemGroupAffinityThread returned on this same thread;
    // PASSIVE_LEVEL.
    unsafe { wdk_sys::ntddk::KeRevertToUserGroupAffinityThread(&mut previous) };
}

/// wine-host: one group (`Groups::active`), so never called.
#[cfg(feature = "wine-host")]
fn bind_to_group(group: u16) -> u16 {
    group
}

/// wine-host: never called (one group).
#[cfg(feature = "wine-host")]
fn revert_group(_previous: u16) {}

/// Starts the driver's pool (DriverEntry): `crate::crypto::encryption_threads` threads over
/// the active processors, or none (below 2: callers encrypt on their own threads).
///
/// IRQL: PASSIVE_LEVEL.
pub fn start_driver_pool(cpus: usize, free_cpus: usize) {
    let groups = Groups::active();
    let threads = crate::crypto::encryption_threads(cpus, free_cpus, usize::from(groups.count));
    if threads == 0 {
        return;
    }
    // W6: a failed allocation leaves the driver without a pool (callers encrypt inline).
    if let Ok(pool) = EncryptionPool::start(threads) {
        let old = POOL.swap(pool.into_raw(), Ordering::AcqRel);
        if let Some(old) = NonNull::new(old) {
            // SAFETY: a pointer stored by this function from `into_raw`, whose count is
            // taken back once, here.
            let old = EncryptionPool { inner: old };
            old.stop();
        }
    }
}

/// The driver's pool, for a new platform (a mount).
pub fn driver_pool() -> Option<EncryptionPool> {
    let p = NonNull::new(POOL.load(Ordering::Acquire))?;
    // SAFETY: a pointer from `into_raw` whose count POOL holds until `stop_driver_pool`,
    // which runs in Unload, after every mount returned (no dispatch routine runs during
    // Unload): the block is alive.
    unsafe { p.as_ref() }.refs.fetch_add(1, Ordering::Relaxed);
    // The count just taken belongs to this new handle.
    Some(EncryptionPool { inner: p })
}

/// Stops and joins the driver's pool (Unload, after every volume was dismounted).
///
/// IRQL: PASSIVE_LEVEL.
pub fn stop_driver_pool() {
    let p = POOL.swap(core::ptr::null_mut(), Ordering::AcqRel);
    if let Some(p) = NonNull::new(p) {
        // The pointer stored by `start_driver_pool` from `into_raw`: POOL's count, taken once.
        let pool = EncryptionPool { inner: p };
        pool.stop();
    }
}
