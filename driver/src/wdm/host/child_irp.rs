//! Child requests: the IRPs the volume sends to its host device, one per segment.
//!
//! Owns: [`ChildIrp`], which builds one (IoBuildAsynchronousFsdRequest: READ, WRITE or
//! FLUSH_BUFFERS, with the mount's FILE_OBJECT in the target's stack location), sends it,
//! waits for its completion routine and frees it with its MDL; and [`ChildIo`], the engine's
//! `HostIo`, which holds the host's remove lock for as long as the IRP exists (R13). Never:
//! retries, times out or abandons a request (R13: a started child is always waited for).

use alloc::boxed::Box;
use core::marker::PhantomData;
use core::ptr::NonNull;

#[cfg(not(feature = "wine-host"))]
use wdk_sys::ntddk::MmUnlockPages;
use wdk_sys::ntddk::{IoBuildAsynchronousFsdRequest, IoFreeIrp, IoFreeMdl, IofCallDriver};
use wdk_sys::{
    DEVICE_OBJECT, FILE_OBJECT, IO_STATUS_BLOCK, IRP, IRP_MJ_FLUSH_BUFFERS, IRP_MJ_WRITE,
    LARGE_INTEGER, NTSTATUS, PVOID,
};

use super::super::codes::nts;
use super::super::remove_lock::RemoveLockGuard;
use super::super::sync::KernelEvent;
use super::KernelHost;
use crate::platform::{Event, HostIo};
use crate::Status;

/// SL_INVOKE_ON_CANCEL | SL_INVOKE_ON_SUCCESS | SL_INVOKE_ON_ERROR.
const SL_INVOKE_ALWAYS: u8 = 0x20 | 0x40 | 0x80;
/// SL_WRITE_THROUGH (IO_STACK_LOCATION.Flags of a write).
const SL_WRITE_THROUGH: u8 = 0x04;

impl KernelHost {
    /// Starts one child request (READ, WRITE or FLUSH_BUFFERS) to the host device.
    ///
    /// # Safety
    /// For READ and WRITE, `buffer` points to `length` bytes of nonpaged memory (writable
    /// for a READ; a WRITE's target only reads them) that stay valid and otherwise untouched
    /// until the returned [`ChildIo`] is waited for or dropped. FLUSH_BUFFERS ignores both.
    pub(super) unsafe fn start(
        &self,
        major: u32,
        offset: u64,
        buffer: *mut u8,
        length: usize,
    ) -> ChildIo<'_> {
        let guard = match self.children.acquire() {
            Ok(g) => g,
            Err(status) => return ChildIo::failed(status),
        };
        let Ok(length32) = u32::try_from(length) else {
            return ChildIo::failed(Status::InvalidParameter);
        };
        let Ok(offset) = i64::try_from(offset) else {
            return ChildIo::failed(Status::InvalidParameter);
        };
        // SAFETY: `device` and `file` are referenced until the host drops, which waits for
        // this request through `guard` (type invariant of KernelHost); the buffer contract is
        // the caller's, for as long as the returned ChildIo (which owns the IRP).
        let sent =
            unsafe { ChildIrp::send(self.device, self.file, major, offset, buffer, length32) };
        match sent {
            Ok(irp) => ChildIo {
                inner: Inner::Sent(irp),
                _guard: Some(guard),
                _buffer: PhantomData,
            },
            Err(status) => ChildIo::failed(status),
        }
    }
}

/// What a child request's completion routine touches: the event it sets and the status block
/// the I/O manager fills in. Boxed, so the pointer the routine gets stays valid.
struct ChildState {
    event: KernelEvent,
    iosb: IO_STATUS_BLOCK,
}

/// One child IRP from its building to its freeing.
///
/// # Invariants
/// `irp` was built by IoBuildAsynchronousFsdRequest with `state.iosb` as its status block and
/// [`child_done`] (context: `state`) as the completion routine of the target's stack
/// location, and was sent. Once `state.event` is set the routine returned
/// MORE_PROCESSING_REQUIRED and the IRP is ours again; `finished` says it was freed (exactly
/// once, by [`ChildIrp::finish`]).
struct ChildIrp {
    state: Box<ChildState>,
    irp: NonNull<IRP>,
    finished: bool,
}

impl ChildIrp {
    /// Builds the IRP for `major` on `device` and sends it.
    ///
    /// # Safety
    /// `device` is a referenced device object and `file` null or a referenced FILE_OBJECT, both
    /// until the returned value is finished; for READ and WRITE, `buffer` is valid for `length`
    /// bytes of nonpaged memory until then (FLUSH_BUFFERS takes no buffer, length or offset).
    unsafe fn send(
        device: NonNull<DEVICE_OBJECT>,
        file: *mut FILE_OBJECT,
        major: u32,
        offset: i64,
        buffer: *mut u8,
        length: u32,
    ) -> Result<ChildIrp, Status> {
        let mut state = Box::new(ChildState {
            event: KernelEvent::new(),
            iosb: IO_STATUS_BLOCK::default(),
        });
        let mut start = LARGE_INTEGER { QuadPart: offset };
        let flush = major == IRP_MJ_FLUSH_BUFFERS;
        // SAFETY: `device` is a referenced device object, `buffer` covers `length` bytes of
        // nonpaged memory until the IRP is freed (contract); `start` and the status block
        // outlive the call (the status block lives in the boxed state until the IRP is
        // freed). Flush takes no buffer, length or offset.
        let irp = unsafe {
            IoBuildAsynchronousFsdRequest(
                major,
                device.as_ptr(),
                if flush {
                    core::ptr::null_mut()
                } else {
                    buffer.cast()
                },
                if flush { 0 } else { length },
                if flush {
                    core::ptr::null_mut()
                } else {
                    &mut start
                },
                &mut state.iosb,
            )
        };
        let Some(irp) = NonNull::new(irp) else {
            return Err(Status::InsufficientResources);
        };
        let context: *mut ChildState = &mut *state;
        // SAFETY: a fresh IRP from IoBuildAsynchronousFsdRequest, ours until IofCallDriver.
        let irp_ref = unsafe { &mut *irp.as_ptr() };
        // SAFETY: before the IRP is sent, the Overlay arm of Tail is the one in use.
        let current = unsafe { irp_ref.Tail.Overlay.__bindgen_anon_2.__bindgen_anon_1 };
        // SAFETY: its CurrentStackLocation arm is the one in use (IoGetNextIrpStackLocation).
        let next = unsafe { current.CurrentStackLocation }.wrapping_sub(1);
        // SAFETY: IoBuildAsynchronousFsdRequest set up the next stack location (the
        // target's); it lies inside the IRP we own.
        let next = unsafe { &mut *next };
        next.FileObject = file;
        if major == IRP_MJ_WRITE {
            next.Flags |= SL_WRITE_THROUGH;
        }
        next.CompletionRoutine = Some(child_done);
        next.Context = context.cast();
        next.Control = SL_INVOKE_ALWAYS;
        // SAFETY: the IRP is fully built; the completion routine always runs (invoked on
        // success, error and cancel) and only signals `state`, which lives until the IRP is
        // freed. The result is read from the IRP after the event, so it is ignored here.
        let _ = unsafe { IofCallDriver(device.as_ptr(), irp.as_ptr()) };
        Ok(ChildIrp {
            state,
            irp,
            finished: false,
        })
    }

    /// Waits for the completion routine, frees the IRP and returns its outcome.
    fn wait(mut self) -> Result<usize, Status> {
        self.finish()
    }

    /// [`wait`](Self::wait) on a request not finished yet (Drop calls it otherwise).
    fn finish(&mut self) -> Result<usize, Status> {
        debug_assert!(!self.finished, "a child IRP is finished twice");
        self.state.event.wait();
        self.finished = true;
        let irp = self.irp.as_ptr();
        // SAFETY: the completion routine ran and returned MORE_PROCESSING_REQUIRED, so the
        // I/O manager handed the IRP back to us; nobody else touches it (type invariant).
        let irp_ref = unsafe { &*irp };
        // SAFETY: the Status arm of the status block is the one a driver completes with.
        let status = unsafe { irp_ref.IoStatus.__bindgen_anon_1.Status };
        let (information, mdl) = (irp_ref.IoStatus.Information, irp_ref.MdlAddress);
        if !mdl.is_null() {
            // Product: the MDL's pages were probed and locked by IoBuildAsynchronousFsdRequest.
            // wine-host: Wine maps the buffer without locking; its MmUnlockPages does nothing.
            #[cfg(not(feature = "wine-host"))]
            // SAFETY: the MDL belongs to our completed IRP and its pages are locked.
            unsafe {
                MmUnlockPages(mdl)
            };
            // SAFETY: the MDL belongs to our completed IRP and is no longer used.
            unsafe { IoFreeMdl(mdl) };
            // SAFETY: our IRP; clearing the pointer keeps IoFreeIrp (Wine's frees MDL chains)
            // from touching the freed MDL.
            unsafe { (*irp).MdlAddress = core::ptr::null_mut() };
        }
        // SAFETY: an IRP we built and got back from its completion routine; freed exactly
        // once (`finished` is set).
        unsafe { IoFreeIrp(irp) };
        if status < 0 {
            Err(Status::from_ntstatus(status as u32))
        } else {
            Ok(information as usize)
        }
    }
}

impl Drop for ChildIrp {
    /// A child IRP is never abandoned: dropping one waits for it and frees it (R13).
    fn drop(&mut self) {
        if !self.finished {
            let _ = self.finish();
        }
    }
}

/// Completion routine of a child request: runs at IRQL <= DISPATCH_LEVEL in an arbitrary
/// thread, signals the owner, keeps the IRP (freed by the owner after the wait).
unsafe extern "C" fn child_done(
    _device: *mut DEVICE_OBJECT,
    _irp: *mut IRP,
    context: PVOID,
) -> NTSTATUS {
    // SAFETY: `context` is the boxed ChildState of this IRP; its owner waits for this event
    // before it frees the state, so it is alive here.
    let state = unsafe { &*context.cast::<ChildState>() };
    state.event.set();
    nts::MORE_PROCESSING_REQUIRED
}

enum Inner {
    Failed(Status),
    Sent(ChildIrp),
    Done,
}

/// A started child request (the engine's `HostIo`). Waiting or dropping blocks until the
/// IRP completed, then frees it (R13: never abandoned, no timeout).
pub struct ChildIo<'a> {
    inner: Inner,
    _guard: Option<RemoveLockGuard<'a>>,
    _buffer: PhantomData<&'a mut [u8]>,
}

impl ChildIo<'_> {
    fn failed(status: Status) -> Self {
        ChildIo {
            inner: Inner::Failed(status),
            _guard: None,
            _buffer: PhantomData,
        }
    }

    fn finish(&mut self) -> Result<usize, Status> {
        match core::mem::replace(&mut self.inner, Inner::Done) {
            Inner::Failed(status) => Err(status),
            Inner::Done => Err(Status::IoDeviceError),
            Inner::Sent(irp) => irp.wait(),
        }
    }
}

impl HostIo for ChildIo<'_> {
    fn wait(mut self) -> Result<usize, Status> {
        self.finish()
    }
}

impl Drop for ChildIo<'_> {
    fn drop(&mut self) {
        if matches!(self.inner, Inner::Sent(_)) {
            let _ = self.finish();
        }
    }
}
