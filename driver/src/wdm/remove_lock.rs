//! Remove locks (IO_REMOVE_LOCK): keep a device from being torn down while requests use it.
//!
//! Owns: the IO_REMOVE_LOCK object. Never: decides when a device goes away (the PnP or
//! dismount path does, through `release_and_wait`).

use alloc::boxed::Box;
use core::cell::UnsafeCell;

use wdk_sys::ntddk::{
    IoAcquireRemoveLockEx, IoInitializeRemoveLockEx, IoReleaseRemoveLockAndWaitEx,
    IoReleaseRemoveLockEx,
};
use wdk_sys::IO_REMOVE_LOCK;

use super::DRIVER_TAG;
use crate::Status;

const REMLOCK_SIZE: u32 = core::mem::size_of::<IO_REMOVE_LOCK>() as u32;

/// An initialized remove lock, in pool memory (it holds a KEVENT, so it never moves).
///
/// IRQL: `acquire` and guard drop at IRQL <= DISPATCH_LEVEL; `release_and_wait` at
/// PASSIVE_LEVEL.
pub struct RemoveLock {
    lock: Box<UnsafeCell<IO_REMOVE_LOCK>>,
}

// SAFETY: the Io*RemoveLock* routines synchronize internally (interlocked counts and a KEVENT).
unsafe impl Send for RemoveLock {}
// SAFETY: as above.
unsafe impl Sync for RemoveLock {}

/// One acquisition of a [`RemoveLock`]; released on drop. Not `Send`: it is released by the
/// request path that took it.
pub struct RemoveLockGuard<'a> {
    lock: &'a RemoveLock,
    _not_send: core::marker::PhantomData<*const ()>,
}

impl Default for RemoveLock {
    fn default() -> Self {
        Self::new()
    }
}

impl RemoveLock {
    /// A remove lock with no holders.
    pub fn new() -> Self {
        // SAFETY: IO_REMOVE_LOCK is a plain C struct; zero is valid before initialization.
        let lock: Box<UnsafeCell<IO_REMOVE_LOCK>> = Box::new(unsafe { core::mem::zeroed() });
        // SAFETY: pool memory that does not move for the lock's life; 0/0 = no limits.
        unsafe { IoInitializeRemoveLockEx(lock.get(), DRIVER_TAG, 0, 0, REMLOCK_SIZE) };
        RemoveLock { lock }
    }

    /// Takes a reference, or `DeviceNotReady` once removal has begun (STATUS_DELETE_PENDING).
    pub fn acquire(&self) -> Result<RemoveLockGuard<'_>, Status> {
        // SAFETY: initialized lock owned by `self`; tag NULL matches the release below; the
        // file/line arguments are only read by checked kernels and may be NULL/0.
        let status = unsafe {
            IoAcquireRemoveLockEx(
                self.lock.get(),
                core::ptr::null_mut(),
                core::ptr::null(),
                0,
                REMLOCK_SIZE,
            )
        };
        if status < 0 {
            return Err(Status::DeviceNotReady);
        }
        Ok(RemoveLockGuard {
            lock: self,
            _not_send: core::marker::PhantomData,
        })
    }

    /// Releases `guard` (the remover's own acquisition), refuses new ones and blocks until all
    /// other holders released theirs.
    pub fn release_and_wait(guard: RemoveLockGuard<'_>) {
        let lock = guard.lock.lock.get();
        core::mem::forget(guard);
        // SAFETY: the caller held one acquisition (the forgotten guard), as the routine
        // requires; PASSIVE_LEVEL per the type contract.
        unsafe { IoReleaseRemoveLockAndWaitEx(lock, core::ptr::null_mut(), REMLOCK_SIZE) };
    }
}

impl Drop for RemoveLockGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: this guard holds one acquisition of the lock, taken with tag NULL.
        unsafe { IoReleaseRemoveLockEx(self.lock.lock.get(), core::ptr::null_mut(), REMLOCK_SIZE) };
    }
}
