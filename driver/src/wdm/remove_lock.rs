//! Remove locks (IO_REMOVE_LOCK): keep a device from being torn down while requests use it.
//!
//! Owns: the IO_REMOVE_LOCK object and every call of the Io*RemoveLock* routines, whether the
//! lock lives in its own pool block ([`RemoveLock`]) or inside a device extension
//! ([`RemoveLockCell`]). Never: decides when a device goes away (the PnP or dismount path
//! does, through `release_and_wait`).

use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::ffi::c_void;

use wdk_sys::ntddk::{
    IoAcquireRemoveLockEx, IoInitializeRemoveLockEx, IoReleaseRemoveLockAndWaitEx,
    IoReleaseRemoveLockEx,
};
use wdk_sys::IO_REMOVE_LOCK;

use super::DRIVER_TAG;
use crate::Status;

const REMLOCK_SIZE: u32 = core::mem::size_of::<IO_REMOVE_LOCK>() as u32;

/// An IO_REMOVE_LOCK in place: inside memory that never moves (a [`RemoveLock`]'s pool block
/// or a device extension). Same layout as IO_REMOVE_LOCK.
///
/// IRQL: `acquire` and guard drop at IRQL <= DISPATCH_LEVEL; `release_and_wait` at
/// PASSIVE_LEVEL.
///
/// # Invariants
/// Once [`RemoveLockCell::init`] ran (its contract), the lock is initialized and never moves
/// until it is no longer used; every method below relies on that.
#[repr(transparent)]
pub struct RemoveLockCell {
    lock: UnsafeCell<IO_REMOVE_LOCK>,
}

// SAFETY: the Io*RemoveLock* routines synchronize internally (interlocked counts and a KEVENT).
unsafe impl Send for RemoveLockCell {}
// SAFETY: as above.
unsafe impl Sync for RemoveLockCell {}

impl RemoveLockCell {
    /// Initializes the lock in place (no limits on holders or hold time).
    ///
    /// # Safety
    /// `self` is zeroed memory that does not move from now until its last use, initialized
    /// once, before any other method is called.
    pub unsafe fn init(&self) {
        // SAFETY: memory that does not move for the lock's life (contract); 0/0 = no limits.
        unsafe { IoInitializeRemoveLockEx(self.lock.get(), DRIVER_TAG, 0, 0, REMLOCK_SIZE) };
    }

    /// Takes a reference, or `DeviceNotReady` once removal has begun (STATUS_DELETE_PENDING).
    pub fn acquire(&self) -> Result<RemoveLockGuard<'_>, Status> {
        self.acquire_tagged(core::ptr::null_mut())
    }

    /// [`acquire`](Self::acquire) with `tag`, the identity checked builds and Driver Verifier
    /// track the acquisition by (never dereferenced; the guard releases with the same tag).
    pub fn acquire_tagged(&self, tag: *mut c_void) -> Result<RemoveLockGuard<'_>, Status> {
        // SAFETY: initialized lock that does not move (type invariant); `tag` is only an
        // identity; the file/line arguments are only read by checked kernels and may be
        // NULL/0.
        let status = unsafe {
            IoAcquireRemoveLockEx(self.lock.get(), tag, core::ptr::null(), 0, REMLOCK_SIZE)
        };
        if status < 0 {
            return Err(Status::DeviceNotReady);
        }
        Ok(RemoveLockGuard {
            lock: self,
            tag,
            _not_send: core::marker::PhantomData,
        })
    }
}

#[cfg(feature = "wine-host")]
impl RemoveLockCell {
    /// W9, wine-host build: after `release_and_wait` returned, every acquisition was released
    /// (the count is back to zero: Wine's lock starts at 0 and its remover's release takes it
    /// there; Windows' starts at 1 and the remover's call releases both). Run where a volume
    /// device is deleted and where a host's child requests drain (at dismount and at unload,
    /// which dismounts what is left); a count that stays above zero means an acquisition that
    /// is never released, reported with the remover's site. Wine's IoAcquireRemoveLockEx tests
    /// Removed and then increments (a check-then-increment race, where Windows increments
    /// first), and a failed acquire after removal raises the count for an instant (increment,
    /// see Removed, decrement), so the count is read a few times before it is reported; a
    /// count still not at zero is that race or an over- or under-release, and the message says
    /// both.
    #[track_caller]
    fn check_drained(&self) {
        let count = || {
            // SAFETY: the initialized lock (type invariant); IoCount is a LONG the Io*RemoveLock*
            // routines change only with interlocked operations: read as the atomic it is.
            let field = unsafe { &raw mut (*self.lock.get()).Common.IoCount };
            // SAFETY: as above; an aligned i32 inside the lock, which lives as long as `self`.
            unsafe { core::sync::atomic::AtomicI32::from_ptr(field) }
                .load(core::sync::atomic::Ordering::SeqCst)
        };
        for _ in 0..1000 {
            if count() == 0 {
                return;
            }
            core::hint::spin_loop();
        }
        super::irql::report_lifecycle(
            "remove lock count not back to zero after release_and_wait (Wine's \
             IoAcquireRemoveLockEx tests Removed then increments: that race, or an acquisition \
             over- or under-released)",
        );
    }
}

/// An initialized remove lock, in its own pool block (it holds a KEVENT, so it never moves).
///
/// IRQL: as [`RemoveLockCell`].
///
/// # Invariants
/// `lock` was initialized by `new` and lives in the box, which never moves.
pub struct RemoveLock {
    lock: Box<RemoveLockCell>,
}

/// One acquisition of a [`RemoveLockCell`]; released on drop. Not `Send`: it is released by the
/// request path that took it.
pub struct RemoveLockGuard<'a> {
    lock: &'a RemoveLockCell,
    /// The tag the acquisition was taken with (released with the same).
    tag: *mut c_void,
    _not_send: core::marker::PhantomData<*const ()>,
}

// Infallible, so only for the wine-host build's self-test (`selftest.rs`); the product makes
// every remove lock with `try_new` (W6).
#[cfg(feature = "wine-host")]
impl Default for RemoveLock {
    fn default() -> Self {
        Self::new()
    }
}

impl RemoveLock {
    /// A remove lock with no holders; infallible, so only for the wine-host build's self-test
    /// (the driver's remove locks are made with [`RemoveLock::try_new`], W6).
    #[cfg(feature = "wine-host")]
    pub fn new() -> Self {
        // SAFETY: IO_REMOVE_LOCK is a plain C struct; zero is valid before initialization.
        let lock: Box<RemoveLockCell> = Box::new(unsafe { core::mem::zeroed() });
        // SAFETY: zeroed pool memory that does not move for the lock's life; first use.
        unsafe { lock.init() };
        RemoveLock { lock }
    }

    /// A remove lock with no holders; a failed pool allocation is STATUS_INSUFFICIENT_RESOURCES
    /// (W6: at mount; asks the Wine build's allocation-failure injection).
    pub fn try_new() -> Result<Self, Status> {
        let layout = core::alloc::Layout::new::<RemoveLockCell>();
        let raw = super::pool::try_allocate_zeroed(layout).cast::<RemoveLockCell>();
        if raw.is_null() {
            return Err(Status::InsufficientResources);
        }
        // SAFETY: allocated above as the global allocator allocates the boxed type's layout,
        // all-zero (a valid IO_REMOVE_LOCK before initialization); the box owns it now.
        let lock = unsafe { Box::from_raw(raw) };
        // SAFETY: zeroed pool memory that does not move for the lock's life; first use.
        unsafe { lock.init() };
        Ok(RemoveLock { lock })
    }

    /// Takes a reference, or `DeviceNotReady` once removal has begun (STATUS_DELETE_PENDING).
    pub fn acquire(&self) -> Result<RemoveLockGuard<'_>, Status> {
        self.lock.acquire()
    }

    /// [`acquire`](Self::acquire) with `tag` (see [`RemoveLockCell::acquire_tagged`]).
    pub fn acquire_tagged(&self, tag: *mut c_void) -> Result<RemoveLockGuard<'_>, Status> {
        self.lock.acquire_tagged(tag)
    }

    /// Releases `guard` (the remover's own acquisition), refuses new ones and blocks until all
    /// other holders released theirs.
    ///
    /// IRQL: PASSIVE_LEVEL.
    #[cfg_attr(feature = "wine-host", track_caller)]
    pub fn release_and_wait(guard: RemoveLockGuard<'_>) {
        guard.release_and_wait();
    }
}

impl RemoveLockGuard<'_> {
    /// Releases this acquisition (the remover's own), refuses new ones and blocks until all
    /// other holders released theirs.
    ///
    /// IRQL: PASSIVE_LEVEL.
    #[cfg_attr(feature = "wine-host", track_caller)]
    pub fn release_and_wait(self) {
        super::irql::check(crate::platform::irql::Call::RemoveLockWait);
        let (cell, lock, tag) = (self.lock, self.lock.lock.get(), self.tag);
        core::mem::forget(self);
        // SAFETY: the caller held one acquisition (the forgotten guard) taken with `tag`, as
        // the routine requires; PASSIVE_LEVEL per the type contract.
        unsafe { IoReleaseRemoveLockAndWaitEx(lock, tag, REMLOCK_SIZE) };
        #[cfg(feature = "wine-host")]
        cell.check_drained();
        #[cfg(not(feature = "wine-host"))]
        let _ = cell;
    }
}

impl RemoveLockGuard<'_> {
    /// Keeps the acquisition past this guard, for a request whose completion routine releases
    /// it ([`RemoveLock::release_kept`]); returns the tag it was taken with.
    pub fn keep(self) -> *mut c_void {
        let tag = self.tag;
        core::mem::forget(self);
        tag
    }
}

impl RemoveLock {
    /// Releases an acquisition kept with [`RemoveLockGuard::keep`] (its `tag`).
    ///
    /// IRQL: <= DISPATCH_LEVEL.
    ///
    /// # Safety
    /// One acquisition of this lock taken with `tag` was kept and is released once, here.
    pub unsafe fn release_kept(&self, tag: *mut c_void) {
        // SAFETY: the kept acquisition (contract), taken with `tag`.
        unsafe { IoReleaseRemoveLockEx(self.lock.lock.get(), tag, REMLOCK_SIZE) };
    }
}

impl Drop for RemoveLockGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: this guard holds one acquisition of the lock, taken with `tag`.
        unsafe { IoReleaseRemoveLockEx(self.lock.lock.get(), self.tag, REMLOCK_SIZE) };
    }
}
