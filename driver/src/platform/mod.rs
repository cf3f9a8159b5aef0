//! What the engine needs from its host OS, as a small trait family.
//!
//! Owns: the contracts between the engine and the three hosts that implement them (`wdm` in the
//! kernel, the std host in user mode, the deterministic simulator) plus the portable primitives
//! built on top of them ([`Rundown`], [`WorkQueue`]).
//! Never: performs I/O or crypto itself.
//!
//! Every point where an engine thread blocks or wakes goes through these traits, so the
//! simulator can run one engine thread at a time and choose the next.

mod injection;
pub mod irql;
pub mod irql_table;
mod request;
mod request_links;
mod request_queue;
mod rundown;
mod work_queue;

#[cfg(feature = "allocation-injection")]
pub use injection::install_allocation_injection;
pub(crate) use injection::installed_says_fail;
pub use injection::AllocationInjection;
pub use request::{
    BufOrigin, Detached, DetachedDone, HostDevice, HostIo, HostKind, HostLimits, HostRead, IoBuf,
    KeptRead, Origin, RequestKind, RequestList, RequestNote, UpperRequest,
};
pub use request_links::{LinkedRequests, RequestLinks, STALE_UNLINK};
pub use request_queue::{RequestQueue, Taken};
pub use rundown::{Rundown, RundownGuard};
pub use work_queue::WorkQueue;

use alloc::boxed::Box;
use alloc::sync::Arc;

/// A piece of a buffer for the encryption pool: data units starting at `first_unit`.
pub struct Piece<'a> {
    /// Absolute data-unit number of the first unit.
    pub first_unit: u64,
    /// The data, whole units.
    pub data: &'a mut [u8],
}

use crate::Status;

/// A short critical section around `T` (a spin lock in the kernel). Never held while blocking.
pub trait Lock<T>: Send + Sync {
    /// A lock around `value`.
    fn new(value: T) -> Self;
    /// Runs `f` with exclusive access to the value.
    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R;
}

/// A notification (manual-reset) event: once set, every waiter passes until it is reset.
pub trait Event: Send + Sync {
    /// An event that is not signalled; STATUS_INSUFFICIENT_RESOURCES when its allocation
    /// fails (W6: in the kernel the KEVENT lives in pool memory, so a mount that makes one
    /// fails instead of bugchecking).
    fn new() -> Result<Self, Status>
    where
        Self: Sized;
    /// Signals the event.
    fn set(&self);
    /// Blocks until the event is signalled. There is no timeout, on purpose (docs/review.md R13).
    fn wait(&self);
}

/// A counting semaphore (KSEMAPHORE in the kernel).
pub trait Semaphore: Send + Sync {
    /// A semaphore with `initial` permits; STATUS_INSUFFICIENT_RESOURCES when its allocation
    /// fails (W6, as [`Event::new`]).
    fn new(initial: usize) -> Result<Self, Status>
    where
        Self: Sized;
    /// Adds one permit, waking one waiter.
    fn release(&self);
    /// Blocks until a permit is available and takes it.
    fn acquire(&self);
    /// Takes a permit if one is available now, without waiting (KeWaitForSingleObject with a
    /// zero timeout in the kernel: allowed up to DISPATCH_LEVEL). True when it took one.
    fn try_acquire(&self) -> bool;
}

/// Work items preallocated for one user (the completion stage of a volume), each carrying a
/// `T` to a routine fixed when they were made: handing one on allocates nothing (in the
/// kernel: IO_WORKITEMs allocated at mount, the payload in the item's own slot).
pub trait WorkItems<T: Send + 'static>: Send + Sync {
    /// Runs the routine on `item` on the OS's shared worker threads (IoQueueWorkItem on the
    /// DelayedWorkQueue in the kernel), never on the caller's thread. The caller keeps fewer
    /// than `count` (as made) items queued or running; should that ever be broken, the item
    /// is handed back and nothing is queued.
    fn queue(&self, item: T) -> Result<(), T>;
}

/// A joinable system thread.
pub trait Thread: Send {
    /// Blocks until the thread has returned.
    fn join(self);
}

/// What an engine thread does: its name, and whether it issues host I/O (and so runs in the
/// mounting user's security context, as VeraCrypt's I/O thread does: docs/review.md R11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadRole {
    /// The volume's completion thread (hands requests to work items).
    Completion,
    /// The legacy queue's main thread (splits, encrypts writes).
    LegacyMain,
    /// The legacy queue's I/O thread (host reads and writes).
    LegacyIo,
    /// The legacy queue's completion thread (decrypts reads).
    LegacyCompletion,
    /// One of the direct path's 8 workers (host reads and writes, crypto).
    DirectWorker,
}

impl ThreadRole {
    /// The thread's name (traces, and the R1 check that no engine thread completes requests).
    pub const fn name(self) -> &'static str {
        match self {
            ThreadRole::Completion => "vc-completion",
            ThreadRole::LegacyMain => "vc-legacy-main",
            ThreadRole::LegacyIo => "vc-legacy-io",
            ThreadRole::LegacyCompletion => "vc-legacy-completion",
            ThreadRole::DirectWorker => "vc-direct-worker",
        }
    }

    /// True for the threads that send I/O to the host device: they impersonate the mounting
    /// user in the kernel, so lower filters see the same context on both paths (R11).
    pub const fn issues_host_io(self) -> bool {
        matches!(self, ThreadRole::LegacyIo | ThreadRole::DirectWorker)
    }

    /// Whether the thread runs at LOW_REALTIME_PRIORITY (docs/review.md W8), as VeraCrypt
    /// decides for its queue threads: the threads that do no crypto (the legacy I/O thread, the
    /// volume's completion thread) always; the threads that encrypt or decrypt (the legacy
    /// main and completion threads, the direct workers) only while the driver's encryption
    /// pool runs (`pool_runs`). Without a pool (one CPU, or `VeraCryptEncryptionFreeCpuCount`
    /// leaving fewer than 2) they would do all AES at real-time priority and starve every
    /// thread of dynamic priority, including the work-queue threads that complete requests.
    pub const fn low_realtime(self, pool_runs: bool) -> bool {
        match self {
            ThreadRole::LegacyIo | ThreadRole::Completion => true,
            ThreadRole::LegacyMain | ThreadRole::LegacyCompletion | ThreadRole::DirectWorker => {
                pool_runs
            }
        }
    }
}

/// The host OS as the engine sees it. Cheap to clone (a handle).
pub trait Platform: Clone + Send + Sync + 'static {
    /// Lock type.
    type Lock<T: Send>: Lock<T>;
    /// Event type.
    type Event: Event;
    /// Semaphore type.
    type Semaphore: Semaphore;
    /// Thread handle type.
    type Thread: Thread;
    /// An upper request (an IRP in the kernel).
    type Request: UpperRequest;
    /// The device a volume lives on.
    type Host: HostDevice;
    /// Preallocated work items carrying a `T` (see [`Platform::work_items`]).
    type WorkItems<T: Send + 'static>: WorkItems<T>;

    /// Starts a system thread in `role` running `body`. A thread whose role issues host I/O
    /// runs in the mounting user's security context (docs/review.md R11).
    fn spawn(
        &self,
        role: ThreadRole,
        body: Box<dyn FnOnce() + Send>,
    ) -> Result<Self::Thread, Status>;

    /// Allocates, now, `count` work items that each run `run` on the `T` they are queued with
    /// (the completion stage's hand-off: nothing is allocated per item afterwards). Fails with
    /// STATUS_INSUFFICIENT_RESOURCES (the mount then fails) when they cannot be allocated.
    fn work_items<T: Send + 'static>(
        &self,
        count: usize,
        run: fn(T),
    ) -> Result<Self::WorkItems<T>, Status>;

    /// `Box::new`, fallibly (W6): STATUS_INSUFFICIENT_RESOURCES instead of the allocation-error
    /// handler, which in the kernel panics and so bugchecks (stable Rust has no
    /// `Box::try_new`). The engine makes every box of a mount through it (thread bodies
    /// included), so a failed allocation fails the mount. The default asks the
    /// allocation-failure injection ([`crate::faults::allocation_fails`]) and then allocates
    /// as std does (a user-mode process aborts on a failed allocation); the kernel platform
    /// allocates from the pool and returns the error.
    fn try_box<T>(&self, value: T) -> Result<Box<T>, Status> {
        if crate::faults::allocation_fails() {
            return Err(Status::InsufficientResources);
        }
        Ok(Box::new(value))
    }

    /// `Arc::new`, fallibly (W6), as [`Platform::try_box`].
    fn try_arc<T>(&self, value: T) -> Result<Arc<T>, Status> {
        if crate::faults::allocation_fails() {
            return Err(Status::InsufficientResources);
        }
        Ok(Arc::new(value))
    }

    /// The watch shown every block that holds a volume's cipher when it is allocated and
    /// right before it is released (`crypto::KeyBlockWatch`): test platforms record the round
    /// keys left in it. Test builds only (feature `fault-switches`; default: none), so a driver
    /// image makes no call through it.
    #[cfg(feature = "fault-switches")]
    fn key_block_watch(&self) -> Option<Arc<dyn crate::crypto::KeyBlockWatch>> {
        None
    }

    /// Number of CPUs, for sizing the encryption pool.
    fn cpu_count(&self) -> usize;

    /// Runs `work` on every piece, spread over the shared encryption threads, and returns when
    /// all are done (VeraCrypt's encryption thread pool). The default runs them in order on
    /// the caller's thread.
    fn run_pieces(&self, pieces: &mut [Piece<'_>], work: &(dyn Fn(&mut Piece<'_>) + Sync)) {
        for piece in pieces {
            work(piece);
        }
    }

    /// Whether small direct requests may go out without a thread waiting for them, finished
    /// in the host's completion context (docs/design.md §5). The default: yes. (The std
    /// platform can say no, to measure the path before them beside the new one.)
    fn detach_requests(&self) -> bool {
        true
    }

    /// Runs `issue` on the calling thread in the mounting user's security context (R11), if
    /// this thread may issue host I/O itself: it runs at PASSIVE_LEVEL (not at APC_LEVEL, not
    /// in a guarded region) with at least `stack` bytes of kernel stack left, it is a thread
    /// the context may be lent to (the kernel: a thread of the System process, not in the
    /// cache manager's or the page writer's path), and the context could be taken. The kernel saves the thread's own impersonation exactly (token, level,
    /// copy-on-open and effective-only, or none), impersonates the mounting user, and restores
    /// what it saved once `issue` returned. `None`: the thread may not, nothing ran (the
    /// request goes to the path's threads). The default: never.
    fn issue_here<R>(&self, stack: usize, issue: impl FnOnce() -> R) -> Option<R> {
        let _ = (stack, issue);
        None
    }

    /// Runs `crypt` with the wide vector registers usable (the VAES path) for a buffer of `len`
    /// bytes, when this platform allows it and it pays; `None`: `crypt` did not run, and the
    /// caller runs the XMM path. User mode: whenever the CPU has VAES. The kernel: x64, from
    /// [`WIDE_MIN_KERNEL`](crate::crypto::WIDE_MIN_KERNEL) bytes, between
    /// KeSaveExtendedProcessorState and KeRestoreExtendedProcessorState; a failed save is
    /// `None`, never an error (W6). The default: never.
    fn wide_vectors<R>(
        &self,
        len: usize,
        crypt: impl FnOnce(&crate::crypto::WideVectors) -> R,
    ) -> Option<R> {
        let _ = (len, crypt);
        None
    }

    /// Runs bulk crypto. The kernel host brackets it with the processor-state save that its
    /// AES backend needs (none for AES-NI, which uses XMM only; see `crypto`).
    fn crypto_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }
}

#[cfg(test)]
mod thread_role_tests {
    use super::ThreadRole;

    #[test]
    fn w8_crypto_threads_are_raised_only_while_the_encryption_pool_runs() {
        for role in [
            ThreadRole::LegacyMain,
            ThreadRole::LegacyCompletion,
            ThreadRole::DirectWorker,
        ] {
            assert!(role.low_realtime(true), "{}", role.name());
            assert!(!role.low_realtime(false), "{}", role.name());
        }
        for role in [ThreadRole::LegacyIo, ThreadRole::Completion] {
            assert!(role.low_realtime(true), "{}", role.name());
            assert!(role.low_realtime(false), "{}", role.name());
        }
    }
}
