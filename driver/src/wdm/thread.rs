//! System threads (PsCreateSystemThread): the engine's `Thread`.
//!
//! Owns: creating a kernel thread that runs a closure, and waiting for the thread object on
//! join. Never: decides what runs there (the engine's I/O and encryption threads do).

use alloc::boxed::Box;
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

use wdk_sys::ntddk::{
    KeInitializeEvent, KeSetEvent, KeWaitForSingleObject, ObReferenceObjectByHandle,
    ObfDereferenceObject, PsCreateSystemThread, PsTerminateSystemThread, ZwClose,
};
use wdk_sys::{
    _EVENT_TYPE::NotificationEvent, _KWAIT_REASON::Executive, _MODE::KernelMode, HANDLE, KEVENT,
    OBJECT_ATTRIBUTES, OBJ_KERNEL_HANDLE, PVOID, SYNCHRONIZE, THREAD_ALL_ACCESS,
};

use wdk_sys::ntddk::KeSetPriorityThread;

use super::irql;
use super::nt;
use super::pool::try_box;
use crate::platform::irql::{Call, Irql};
use crate::platform::Thread;
use crate::Status;

/// LOW_REALTIME_PRIORITY (wdm.h): the lowest real-time priority, above every dynamic one
/// (the modified-page writer runs at 17, normal threads at 8..15).
const LOW_REALTIME_PRIORITY: i32 = 16;

extern "system" {
    /// Exported by ntoskrnl on x64 and ARM64 (the headers inline it on x64 only, and
    /// PsGetCurrentThread is an inline on both, with no export verified on ARM64). The
    /// KTHREAD is the first member of the ETHREAD: the same pointer.
    fn KeGetCurrentThread() -> wdk_sys::PETHREAD;
}

/// The calling thread's KTHREAD (ETHREAD) pointer.
pub(crate) fn current_thread() -> wdk_sys::PETHREAD {
    // SAFETY: no preconditions; callable at any IRQL.
    unsafe { KeGetCurrentThread() }
}

/// Whether the calling thread may issue a host request itself (`Platform::issue_here`): it runs
/// at PASSIVE_LEVEL, not in a guarded region (KeAreAllApcsDisabled: false), and has at least
/// `stack` bytes of kernel stack left below this frame (IoGetRemainingStackSize, an inline
/// of the headers: the current address minus IoGetStackLimits' low limit). wine-host: the
/// virtual level is PASSIVE (Wine's own answers PASSIVE everywhere; its thread stacks are
/// user-mode stacks of a megabyte or more, so no stack check).
#[cfg(not(feature = "wine-host"))]
pub(crate) fn may_issue_host_io(stack: usize) -> bool {
    use wdk_sys::ntddk::{IoGetStackLimits, KeAreAllApcsDisabled};
    // SAFETY: no preconditions; callable at any IRQL.
    if unsafe { KeAreAllApcsDisabled() } != 0 {
        return false;
    }
    let (mut low, mut high) = (0u64, 0u64);
    // SAFETY: both out-parameters are valid for the call; callable at IRQL <= DISPATCH_LEVEL.
    unsafe { IoGetStackLimits(&mut low, &mut high) };
    let here = core::ptr::from_ref(&low) as u64;
    here > low && here <= high && (here - low) as usize >= stack
}

/// wine-host build: see the product's.
#[cfg(feature = "wine-host")]
pub(crate) fn may_issue_host_io(_stack: usize) -> bool {
    irql::at_passive()
}

/// Raises the calling system thread to LOW_REALTIME_PRIORITY (docs/review.md W8), as
/// VeraCrypt's queue threads do: the engine's threads then never wait behind CPU-bound
/// threads of dynamic priority while the memory manager waits for them (paging writes).
///
/// IRQL: PASSIVE_LEVEL, on the system thread itself, before its first wait.
pub(crate) fn run_at_low_realtime_priority() {
    // SAFETY: the current thread's own KTHREAD, valid while it runs; KeSetPriorityThread
    // requires PASSIVE_LEVEL (WDK), which this function's contract gives, and 16 is a valid priority (1..31). The previous
    // priority it returns is not needed.
    let _ = unsafe { KeSetPriorityThread(current_thread().cast(), LOW_REALTIME_PRIORITY) };
}

/// The calling system thread's priority (set to 16 and back: the WDK's query is not imported).
/// Called by a thread before its first wait, it is the thread's base priority (no wake-up
/// boost yet).
///
/// IRQL: PASSIVE_LEVEL (KeSetPriorityThread's).
pub(crate) fn own_priority() -> i32 {
    // SAFETY: as in `run_at_low_realtime_priority`; it returns the priority the thread had.
    let priority = unsafe { KeSetPriorityThread(current_thread().cast(), LOW_REALTIME_PRIORITY) };
    // SAFETY: as above; `priority` is one this thread had, so a valid one.
    let _ = unsafe { KeSetPriorityThread(current_thread().cast(), priority) };
    priority
}

/// Runs `f` with the calling system thread at LOW_REALTIME_PRIORITY, then sets `base` (the
/// thread's own priority, from [`own_priority`]): an encryption-pool thread takes and runs a
/// caller's piece at its caller's priority (the engine's threads that hand pieces to the pool
/// run at 16 while it runs, W8), so the caller never waits for a piece held by a thread of
/// lower priority.
///
/// IRQL: PASSIVE_LEVEL (KeSetPriorityThread's). Inlined, so the pool's one indirect call
/// stays in `pool_thread`, where W13's stack budget finds it by name.
#[inline(always)]
pub(crate) fn at_low_realtime_priority<R>(base: i32, f: impl FnOnce() -> R) -> R {
    // SAFETY: as in `run_at_low_realtime_priority`.
    let _ = unsafe { KeSetPriorityThread(current_thread().cast(), LOW_REALTIME_PRIORITY) };
    let result = f();
    // SAFETY: as above; `base` is a priority this thread had, so a valid one.
    let _ = unsafe { KeSetPriorityThread(current_thread().cast(), base) };
    result
}

/// What the new thread owns: its body, and a gate so that it runs the body only once the
/// creator holds a reference to the thread object (otherwise the creator could not join it).
/// One pool allocation (W6: fallible); the gate is a notification KEVENT inside it, which does
/// not move once the block is allocated.
struct Start {
    gate: UnsafeCell<KEVENT>,
    run: AtomicBool,
    body: Box<dyn FnOnce() + Send>,
}

/// A referenced system thread. `join` waits for it; dropping without `join` detaches it.
///
/// IRQL: `spawn` and `join` at PASSIVE_LEVEL.
pub struct SystemThread {
    object: PVOID,
}

// SAFETY: the handle is a referenced ETHREAD pointer; waiting on it and dereferencing it are
// valid from any system thread.
unsafe impl Send for SystemThread {}

impl SystemThread {
    /// Starts a system thread that runs `body` and then terminates. A failed allocation or
    /// thread creation is an error (never the allocation-error handler, W6).
    #[cfg_attr(feature = "wine-host", track_caller)]
    pub fn spawn(body: Box<dyn FnOnce() + Send>) -> Result<Self, Status> {
        irql::check(Call::SpawnThread);
        let start = Box::into_raw(try_box(Start {
            // SAFETY: KEVENT is a plain C struct; all-zero is valid before KeInitializeEvent.
            gate: UnsafeCell::new(unsafe { core::mem::zeroed() }),
            run: AtomicBool::new(false),
            body,
        })?);
        // SAFETY: `start` is our fresh pool block, valid and not shared yet.
        let gate = unsafe { (*start).gate.get() };
        // SAFETY: the gate lives in that block, which does not move until it is freed.
        unsafe { KeInitializeEvent(gate, NotificationEvent, 0) };
        let mut attributes = OBJECT_ATTRIBUTES {
            Length: core::mem::size_of::<OBJECT_ATTRIBUTES>() as u32,
            RootDirectory: core::ptr::null_mut(),
            ObjectName: core::ptr::null_mut(),
            Attributes: OBJ_KERNEL_HANDLE,
            SecurityDescriptor: core::ptr::null_mut(),
            SecurityQualityOfService: core::ptr::null_mut(),
        };
        let mut handle: HANDLE = core::ptr::null_mut();
        // SAFETY: every pointer argument is valid for the call; `start` stays alive until the
        // thread routine reclaims it (on success) or we do (on failure, below).
        let status = unsafe {
            PsCreateSystemThread(
                &mut handle,
                THREAD_ALL_ACCESS,
                &mut attributes,
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                Some(thread_start),
                start.cast(),
            )
        };
        if status < 0 {
            // SAFETY: the thread was not created, so `start` is still ours alone.
            drop(unsafe { Box::from_raw(start) });
            return Err(Status::from_ntstatus(status as u32));
        }
        let mut object: PVOID = core::ptr::null_mut();
        // SAFETY: `handle` is the kernel handle PsCreateSystemThread just returned.
        let status = unsafe {
            ObReferenceObjectByHandle(
                handle,
                SYNCHRONIZE,
                core::ptr::null_mut(),
                KernelMode as i8,
                &mut object,
                core::ptr::null_mut(),
            )
        };
        // SAFETY: `start` is alive: the thread reclaims it only after the gate opens, below.
        let start_ref = unsafe { &*start };
        start_ref.run.store(status >= 0, Ordering::Release);
        // SAFETY: the gate initialized above; Wait = FALSE. After this call nothing of
        // `start` is touched (the thread frees it).
        unsafe { KeSetEvent(start_ref.gate.get(), 0, 0) };
        // SAFETY: we own `handle`; the thread keeps running without it.
        let _ = unsafe { ZwClose(handle) };
        if status < 0 {
            // The thread drops its body without running it and terminates.
            return Err(Status::from_ntstatus(status as u32));
        }
        Ok(SystemThread { object })
    }
}

unsafe extern "C" fn thread_start(context: PVOID) {
    // SAFETY: `context` is the `Start` leaked by `spawn`, handed to exactly this thread.
    let start = unsafe { Box::from_raw(context.cast::<Start>()) };
    // SAFETY: the gate in `start`, initialized by `spawn`, alive until this thread drops
    // `start`; kernel-mode, non-alertable wait without timeout at PASSIVE_LEVEL (a system
    // thread's start routine). The only result is STATUS_SUCCESS.
    let _ = unsafe {
        KeWaitForSingleObject(
            start.gate.get().cast(),
            Executive,
            KernelMode as i8,
            0,
            core::ptr::null_mut(),
        )
    };
    // W9 (wine-host build): a fresh system thread starts at PASSIVE_LEVEL; a level found
    // under its key is a stale entry, reported.
    irql::check_entered_at_passive();
    // Everything the thread owns is dropped in there: PsTerminateSystemThread does not
    // return, so a value still alive when it is called would leak its pool block (Driver
    // Verifier's pool tracking bugchecks 0xC4 at unload for it).
    run_body(start);
    // W5: the stack goes back to the system with whatever the body left on it (round keys a
    // cipher's rounds spilled, trap frames with the registers they held); zero it first.
    crate::crypto::burn_thread_stack();
    // W9 (wine-host build): a system thread ends at PASSIVE_LEVEL (PsTerminateSystemThread's
    // contract); one that leaves raised (a spin lock guard leaked) is reported here.
    irql::check_returned_at(Irql::Passive);
    // SAFETY: called on the system thread itself, at PASSIVE_LEVEL, as its last action.
    let _ = unsafe { PsTerminateSystemThread(nt(Status::Success)) };
}

/// Runs the thread's body if `spawn` let it, and frees the start block and whatever the body
/// did not consume before it returns.
// The block itself must be freed in here, before the thread ends: taken by value, the box
// would be dropped in `thread_start`, after PsTerminateSystemThread, that is never.
#[allow(clippy::boxed_local)]
fn run_body(start: Box<Start>) {
    let Start { run, body, .. } = *start;
    if run.load(Ordering::Acquire) {
        body();
    }
}

impl SystemThread {
    /// Waits at most `ms` milliseconds for the thread to end (`None`: without bound); true
    /// when it ended. A finite wait on a thread of this driver, never on another driver's
    /// object (R13): shutdown's bound on its own dismount thread.
    ///
    /// IRQL: PASSIVE_LEVEL.
    pub fn wait_for(&self, ms: Option<u32>) -> bool {
        irql::check(Call::JoinThread);
        // Relative time (negative), in 100 ns units.
        let mut timeout = wdk_sys::LARGE_INTEGER {
            QuadPart: -(i64::from(ms.unwrap_or(0)) * 10_000),
        };
        let timeout_ptr = match ms {
            Some(_) => &mut timeout as *mut wdk_sys::LARGE_INTEGER,
            None => core::ptr::null_mut(),
        };
        // SAFETY: `object` is a referenced thread object (held until `drop`), signalled when
        // the thread terminates; `timeout` lives across the call; kernel-mode, non-alertable
        // wait at PASSIVE_LEVEL (this function's contract).
        let status = unsafe {
            KeWaitForSingleObject(self.object, Executive, KernelMode as i8, 0, timeout_ptr)
        };
        // STATUS_SUCCESS: ended; STATUS_TIMEOUT (0x102): still running.
        status == 0
    }
}

impl Thread for SystemThread {
    #[cfg_attr(feature = "wine-host", track_caller)]
    fn join(self) {
        irql::check(Call::JoinThread);
        // SAFETY: `object` is a referenced thread object (held until `drop`); a thread object
        // is signalled when the thread terminates. PASSIVE_LEVEL per the type contract.
        // Without timeout the only result is STATUS_SUCCESS.
        let _ = unsafe {
            KeWaitForSingleObject(
                self.object,
                Executive,
                KernelMode as i8,
                0,
                core::ptr::null_mut(),
            )
        };
    }
}

impl Drop for SystemThread {
    fn drop(&mut self) {
        // SAFETY: releases the reference taken by ObReferenceObjectByHandle in `spawn`.
        unsafe { ObfDereferenceObject(self.object) };
    }
}
