//! The control device's KMUTEX (docs/review.md W4): one control IOCTL at a time.
//!
//! Owns: the KMUTEX object and its wait and release. Never: decides what it serializes (the
//! control module wraps each control IOCTL in it).
//! A KMUTEX, not a fast mutex: it may be held across Zw* calls and waits (a mount opens the
//! host and starts threads under it), and it stays at PASSIVE_LEVEL (normal kernel APCs are
//! disabled while it is held; special kernel APCs, which complete synchronous I/O, are not).

use alloc::boxed::Box;
use core::cell::UnsafeCell;

use wdk_sys::ntddk::{KeInitializeMutex, KeReleaseMutex, KeWaitForSingleObject};
use wdk_sys::{_KWAIT_REASON::Executive, _MODE::KernelMode, KMUTEX};

/// A KMUTEX that runs closures one at a time.
///
/// IRQL: `try_new` and `with` at PASSIVE_LEVEL (`with` waits without timeout).
pub struct KernelMutex {
    mutex: Box<UnsafeCell<KMUTEX>>,
}

// SAFETY: a KMUTEX is a dispatcher object made to be waited on from any thread; all access
// goes through Ke* calls that synchronize internally.
unsafe impl Send for KernelMutex {}
// SAFETY: as above.
unsafe impl Sync for KernelMutex {}

impl KernelMutex {
    /// An unowned mutex in pool memory (it never moves after initialization), allocated
    /// fallibly (W6: STATUS_INSUFFICIENT_RESOURCES, DriverEntry then fails and undoes what it
    /// made).
    pub fn try_new() -> Result<KernelMutex, crate::Status> {
        // SAFETY: KMUTEX is a plain C struct; all-zero is valid before KeInitializeMutex.
        let mutex: Box<UnsafeCell<KMUTEX>> =
            super::pool::try_box(UnsafeCell::new(unsafe { core::mem::zeroed() }))?;
        // SAFETY: pool memory that does not move for the mutex's life; level 0 (unused).
        unsafe { KeInitializeMutex(mutex.get(), 0) };
        Ok(KernelMutex { mutex })
    }

    /// Runs `f` holding the mutex; the mutex is released when `f` returns. Not reentrant
    /// from inside `f` in practice (a KMUTEX is, but nothing here needs it).
    #[cfg_attr(feature = "wine-host", track_caller)]
    pub fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        super::irql::check(crate::platform::irql::Call::Wait);
        struct Held<'a>(&'a KernelMutex);
        impl Drop for Held<'_> {
            fn drop(&mut self) {
                // SAFETY: this thread owns the mutex (acquired below); Wait=FALSE as no
                // wait call follows at once.
                let _ = unsafe { KeReleaseMutex(self.0.mutex.get(), 0) };
            }
        }
        // SAFETY: initialized mutex owned by `self`; kernel-mode, non-alertable wait without
        // timeout at PASSIVE_LEVEL (type contract). The only result is STATUS_SUCCESS
        // (STATUS_ABANDONED cannot occur: every owner releases before its thread ends).
        let _ = unsafe {
            KeWaitForSingleObject(
                self.mutex.get().cast(),
                Executive,
                KernelMode as i8,
                0,
                core::ptr::null_mut(),
            )
        };
        let _held = Held(self);
        f()
    }
}
