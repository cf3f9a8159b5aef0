//! Spin lock, notification event and semaphore: the engine's `Lock`, `Event` and `Semaphore`.
//!
//! Owns: the KSPIN_LOCK, KEVENT and KSEMAPHORE objects and their IRQL rules.
//! Never: decides what is protected or awaited; the engine does (platform traits).
//! Dispatcher objects (KEVENT, KSEMAPHORE) hold a wait list that points to itself, so they live
//! in pool memory (`Box`) and never move after `KeInitialize*`.

use alloc::boxed::Box;
use core::alloc::Layout;
use core::cell::UnsafeCell;

use wdk_sys::ntddk::{
    KeAcquireSpinLockRaiseToDpc, KeInitializeEvent, KeInitializeSemaphore, KeReleaseSemaphore,
    KeReleaseSpinLock, KeSetEvent, KeWaitForSingleObject,
};
use wdk_sys::{
    _EVENT_TYPE::NotificationEvent, _KWAIT_REASON::Executive, _MODE::KernelMode, KEVENT,
    KSEMAPHORE, KSPIN_LOCK, LARGE_INTEGER, MAXLONG, STATUS_SUCCESS,
};

use super::irql::{self, Raised};
use crate::platform::irql::Call;
use crate::platform::{Event, Lock, Semaphore};
use crate::Status;

/// A value behind a KSPIN_LOCK.
///
/// IRQL: `with` may be called at IRQL <= DISPATCH_LEVEL; it runs its closure at DISPATCH_LEVEL,
/// so the closure must not block, wait, touch paged memory or allocate paged pool.
pub struct SpinLock<T> {
    lock: UnsafeCell<KSPIN_LOCK>,
    value: UnsafeCell<T>,
}

// SAFETY: the value is only reached inside `with`, while the spin lock is held, so at most one
// thread touches it at a time; moving the lock between threads moves `T`, hence `T: Send`.
unsafe impl<T: Send> Send for SpinLock<T> {}
// SAFETY: as above: shared access only hands out `&mut T` under the spin lock.
unsafe impl<T: Send> Sync for SpinLock<T> {}

impl<T: Send> Lock<T> for SpinLock<T> {
    fn new(value: T) -> Self {
        // KeInitializeSpinLock is an inline function that stores zero; a zero KSPIN_LOCK that is
        // not held may be moved freely.
        SpinLock {
            lock: UnsafeCell::new(0),
            value: UnsafeCell::new(value),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        // Releases the lock even if `f` unwinds (it cannot with panic=abort, but the guard keeps
        // the pairing local and obvious).
        struct Held<'a> {
            lock: *mut KSPIN_LOCK,
            old_irql: u8,
            _borrow: core::marker::PhantomData<&'a ()>,
        }
        impl Drop for Held<'_> {
            fn drop(&mut self) {
                // SAFETY: `lock` was acquired by this guard with KeAcquireSpinLockRaiseToDpc and
                // `old_irql` is the IRQL it returned.
                unsafe { KeReleaseSpinLock(self.lock, self.old_irql) };
            }
        }
        let lock = self.lock.get();
        // SAFETY: `lock` points to an initialized KSPIN_LOCK that lives as long as `self`;
        // the caller runs at IRQL <= DISPATCH_LEVEL (type contract).
        let old_irql = unsafe { KeAcquireSpinLockRaiseToDpc(lock) };
        let _held = Held {
            lock,
            old_irql,
            _borrow: core::marker::PhantomData,
        };
        // W9, wine-host build: the closure runs at virtual DISPATCH_LEVEL, as it does on
        // Windows (Wine's spin lock raises nothing). Locals drop in reverse order: the level is
        // lowered, then the lock released (KeReleaseSpinLock restores the IRQL as it releases).
        // Product build: a zero-sized value, nothing kept.
        let _dispatch = Raised::to_dispatch();
        // SAFETY: the spin lock is held until `_held` drops, so no other reference to the value
        // exists for the duration of `f`.
        let value = unsafe { &mut *self.value.get() };
        f(value)
    }
}

/// A notification (manual-reset) KEVENT.
///
/// IRQL: `set` at IRQL <= DISPATCH_LEVEL; `wait` at PASSIVE_LEVEL (it blocks without timeout).
pub struct KernelEvent {
    event: Box<UnsafeCell<KEVENT>>,
}

// SAFETY: a KEVENT is a kernel dispatcher object meant to be signalled and awaited from any
// thread; all access goes through Ke* calls that synchronize internally.
unsafe impl Send for KernelEvent {}
// SAFETY: as above.
unsafe impl Sync for KernelEvent {}

impl KernelEvent {
    /// The KEVENT, for kernel routines that signal it (a child IRP's completion, a
    /// device-control IRP built with IoBuildDeviceIoControlRequest). It does not move.
    pub(crate) fn as_ptr(&self) -> *mut KEVENT {
        self.event.get()
    }
}

impl KernelEvent {
    /// `Event::new` (the trait's constructor calls it): a failed pool allocation is
    /// STATUS_INSUFFICIENT_RESOURCES (W6: a mount fails, it never bugchecks).
    pub fn try_new() -> Result<Self, Status> {
        let layout = Layout::new::<UnsafeCell<KEVENT>>();
        let raw = super::pool::try_allocate_zeroed(layout).cast::<UnsafeCell<KEVENT>>();
        if raw.is_null() {
            return Err(Status::InsufficientResources);
        }
        // SAFETY: allocated above as the global allocator allocates the boxed type's layout,
        // all-zero (a valid KEVENT before initialization); the box owns it now.
        let event = unsafe { Box::from_raw(raw) };
        // SAFETY: `event` is in pool memory that does not move for the event's life.
        unsafe { KeInitializeEvent(event.get(), NotificationEvent, 0) };
        Ok(KernelEvent { event })
    }
}

impl Event for KernelEvent {
    fn new() -> Result<Self, Status> {
        Self::try_new()
    }

    fn set(&self) {
        // SAFETY: the event was initialized in `new` and lives as long as `self`; Wait=FALSE
        // because no wait call follows immediately.
        unsafe { KeSetEvent(self.event.get(), 0, 0) };
    }

    #[cfg_attr(feature = "wine-host", track_caller)]
    fn wait(&self) {
        irql::check(Call::Wait);
        // SAFETY: initialized event owned by `self`; kernel-mode, non-alertable wait without
        // timeout at PASSIVE_LEVEL (type contract). The only result is STATUS_SUCCESS.
        let _ = unsafe {
            KeWaitForSingleObject(
                self.event.get().cast(),
                Executive,
                KernelMode as i8,
                0,
                core::ptr::null_mut(),
            )
        };
    }
}

/// A counting KSEMAPHORE (limit MAXLONG).
///
/// IRQL: `release` at IRQL <= DISPATCH_LEVEL; `acquire` at PASSIVE_LEVEL (it blocks).
pub struct KernelSemaphore {
    semaphore: Box<UnsafeCell<KSEMAPHORE>>,
}

// SAFETY: a KSEMAPHORE is a dispatcher object shared between threads by design; access goes
// through Ke* calls that synchronize internally.
unsafe impl Send for KernelSemaphore {}
// SAFETY: as above.
unsafe impl Sync for KernelSemaphore {}

impl KernelSemaphore {
    /// `Semaphore::new` (the trait's constructor calls it): a failed pool allocation is
    /// STATUS_INSUFFICIENT_RESOURCES instead of the allocation-error handler (W6: a mount
    /// fails, it never bugchecks).
    pub fn try_new(initial: usize) -> Result<Self, Status> {
        let layout = Layout::new::<UnsafeCell<KSEMAPHORE>>();
        let raw = super::pool::try_allocate_zeroed(layout).cast::<UnsafeCell<KSEMAPHORE>>();
        if raw.is_null() {
            return Err(Status::InsufficientResources);
        }
        // SAFETY: allocated above as the global allocator allocates the boxed type's layout,
        // and all-zero is a valid KSEMAPHORE before initialization; the box owns it now.
        let semaphore = unsafe { Box::from_raw(raw) };
        Ok(Self::init(semaphore, initial))
    }

    fn init(semaphore: Box<UnsafeCell<KSEMAPHORE>>, initial: usize) -> Self {
        let initial = i32::try_from(initial).unwrap_or(i32::MAX);
        // SAFETY: pool memory that does not move for the semaphore's life; 0 <= initial <= limit.
        unsafe { KeInitializeSemaphore(semaphore.get(), initial, MAXLONG as i32) };
        KernelSemaphore { semaphore }
    }
}

impl Semaphore for KernelSemaphore {
    fn new(initial: usize) -> Result<Self, Status> {
        Self::try_new(initial)
    }

    fn release(&self) {
        // SAFETY: initialized semaphore owned by `self`; adding one permit never exceeds
        // MAXLONG: permits are released per queued item (WorkQueue) or per piece posted to
        // the encryption pool (whose threads use up any a caller left unused), never more
        // than a few thousand at once.
        unsafe { KeReleaseSemaphore(self.semaphore.get(), 0, 1, 0) };
    }

    #[cfg_attr(feature = "wine-host", track_caller)]
    fn acquire(&self) {
        irql::check(Call::Wait);
        // SAFETY: initialized semaphore owned by `self`; kernel-mode, non-alertable wait without
        // timeout at PASSIVE_LEVEL (type contract). The only result is STATUS_SUCCESS.
        let _ = unsafe {
            KeWaitForSingleObject(
                self.semaphore.get().cast(),
                Executive,
                KernelMode as i8,
                0,
                core::ptr::null_mut(),
            )
        };
    }

    #[cfg_attr(feature = "wine-host", track_caller)]
    fn try_acquire(&self) -> bool {
        irql::check(Call::TryAcquire);
        // A zero relative timeout: the wait returns at once, STATUS_SUCCESS with a permit
        // taken or STATUS_TIMEOUT without one; it never blocks, so it is allowed at
        // IRQL <= DISPATCH_LEVEL (the completion stage calls it from a finishing thread).
        let mut zero = LARGE_INTEGER { QuadPart: 0 };
        // SAFETY: initialized semaphore owned by `self`; `zero` lives across the call; a
        // kernel-mode, non-alertable wait with a zero timeout does not block at any IRQL up to
        // DISPATCH_LEVEL.
        let status = unsafe {
            KeWaitForSingleObject(
                self.semaphore.get().cast(),
                Executive,
                KernelMode as i8,
                0,
                &mut zero,
            )
        };
        status == STATUS_SUCCESS
    }
}
