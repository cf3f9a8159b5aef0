//! The engine's `Platform` in the kernel.
//!
//! Owns: [`KernelPlatform`], which lends the engine the wrappers of this module.
//! Never: does I/O itself: `Host` is [`KernelHost`], `Request` is the real [`Irp`].

use alloc::boxed::Box;
use alloc::sync::Arc;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};

use wdk_sys::ntddk::KeQueryActiveProcessorCountEx;
use wdk_sys::DEVICE_OBJECT;

use super::encryption_pool::{self, EncryptionPool};
use super::host::KernelHost;
use super::irp::Irp;
use super::pool::{try_arc, try_box};
use super::sync::{KernelEvent, KernelSemaphore, SpinLock};
use super::thread::{run_at_low_realtime_priority, SystemThread};
use super::work_item::WorkItemPool;
use crate::platform::{Event, Piece, Platform, Thread, ThreadRole};
use crate::Status;

/// ALL_PROCESSOR_GROUPS for KeQueryActiveProcessorCountEx.
const ALL_PROCESSOR_GROUPS: u16 = 0xffff;

/// The kernel as the engine sees it, for one volume: the device that owns its work items
/// (each pool made at mount by `work_items`), and the mounting user's security context (R11).
#[derive(Clone)]
pub struct KernelPlatform {
    device: NonNull<DEVICE_OBJECT>,
    security: Option<Arc<ClientSecurity>>,
    /// The driver's encryption pool (started in DriverEntry), if it runs.
    encryption: Option<EncryptionPool>,
}

// SAFETY: the device object lives until Unload, after every engine object using the platform
// was torn down; the kernel routines taking it are callable from any thread.
unsafe impl Send for KernelPlatform {}
// SAFETY: as above; the platform's own state is shared through Send + Sync types.
unsafe impl Sync for KernelPlatform {}

impl KernelPlatform {
    /// A platform whose work items belong to `device`; threads that issue host I/O
    /// impersonate `security` when given.
    ///
    /// # Safety
    /// `device` is a device object of this driver that outlives every clone of the platform.
    pub unsafe fn new(
        device: NonNull<DEVICE_OBJECT>,
        security: Option<Arc<ClientSecurity>>,
    ) -> Result<Self, Status> {
        Ok(KernelPlatform {
            device,
            security,
            encryption: encryption_pool::driver_pool(),
        })
    }

    /// The device that owns the platform's work items (the wine-host self-test's own pool).
    #[cfg(feature = "wine-host")]
    pub(crate) fn device(&self) -> NonNull<DEVICE_OBJECT> {
        self.device
    }
}

impl Platform for KernelPlatform {
    type Lock<T: Send> = SpinLock<T>;
    type Event = KernelEvent;
    type Semaphore = KernelSemaphore;
    type Thread = SystemThread;
    type Request = Irp;
    type Host = KernelHost;
    type WorkItems<T: Send + 'static> = Arc<WorkItemPool<T>>;

    /// W8: an engine thread raises itself to LOW_REALTIME_PRIORITY first when
    /// `ThreadRole::low_realtime` says so, as VeraCrypt's queue threads do: the legacy I/O
    /// thread and the volume's completion thread always, the threads that do crypto (legacy
    /// main and completion, direct workers) only while the driver's encryption pool runs. The
    /// encryption pool's threads wait at the default priority, as VeraCrypt's do, and run each
    /// piece at LOW_REALTIME_PRIORITY, their callers' (wdm/encryption_pool.rs).
    fn spawn(
        &self,
        role: ThreadRole,
        body: Box<dyn FnOnce() + Send>,
    ) -> Result<Self::Thread, Status> {
        let pool_runs = self.encryption.as_ref().is_some_and(|p| p.threads() > 0);
        let raise = role.low_realtime(pool_runs);
        match (&self.security, role.issues_host_io()) {
            (Some(security), true) => {
                let security = Arc::clone(security);
                // W5: the thread reports whether it could impersonate before it runs `body`;
                // one that cannot never runs it (no host I/O as System), and the spawn (so
                // the mount) fails with SeImpersonateClientEx's status.
                let started = try_arc((KernelEvent::try_new()?, AtomicU32::new(0)))?;
                let report = Arc::clone(&started);
                let thread = SystemThread::spawn(try_box(move || {
                    if raise {
                        run_at_low_realtime_priority();
                    }
                    // R11: host I/O of this thread runs as the mounting user, like
                    // VeraCrypt's I/O thread.
                    let impersonated = security.impersonate();
                    if let Err(status) = impersonated {
                        report.1.store(status.ntstatus(), Ordering::Release);
                    }
                    report.0.set();
                    if impersonated.is_ok() {
                        body();
                        ClientSecurity::revert();
                    }
                })?)?;
                started.0.wait();
                match started.1.load(Ordering::Acquire) {
                    0 => Ok(thread),
                    raw => {
                        thread.join();
                        Err(Status::from_ntstatus(raw))
                    }
                }
            }
            _ => SystemThread::spawn(try_box(move || {
                if raise {
                    run_at_low_realtime_priority();
                }
                body();
            })?),
        }
    }

    /// R11: the dispatching thread issues as the mounting user and gets its own context back
    /// exactly (`ClientSecurity::as_mounting_user`); W9: only at PASSIVE_LEVEL outside guarded
    /// regions, with `stack` bytes of kernel stack left (`thread::may_issue_host_io`).
    fn issue_here<R>(&self, stack: usize, issue: impl FnOnce() -> R) -> Option<R> {
        if !super::thread::may_issue_host_io(stack) {
            return None;
        }
        match &self.security {
            Some(security) => security.as_mounting_user(issue).ok(),
            None => Some(issue()),
        }
    }

    /// W6: from the pool, STATUS_INSUFFICIENT_RESOURCES when it has none (`pool::try_box`).
    fn try_box<T>(&self, value: T) -> Result<Box<T>, Status> {
        try_box(value)
    }

    /// W6: a block reserved fallibly first (`pool::try_arc`).
    fn try_arc<T>(&self, value: T) -> Result<Arc<T>, Status> {
        try_arc(value)
    }

    fn work_items<T: Send + 'static>(
        &self,
        count: usize,
        run: fn(T),
    ) -> Result<Self::WorkItems<T>, Status> {
        WorkItemPool::new(self.device.as_ptr(), count.max(1), run)
    }

    fn cpu_count(&self) -> usize {
        active_processors()
    }

    /// The wide (VAES) path on the x64 product image, from `WIDE_MIN_KERNEL` bytes, inside
    /// `vector_state::with_wide_vectors`'s save and restore; `None` (the XMM path) below it, on
    /// the Wine build and on ARM64, and when the save fails.
    fn wide_vectors<R>(
        &self,
        len: usize,
        crypt: impl FnOnce(&crate::crypto::WideVectors) -> R,
    ) -> Option<R> {
        #[cfg(all(target_arch = "x86_64", not(feature = "wine-host")))]
        if len >= crate::crypto::WIDE_MIN_KERNEL {
            return super::vector_state::with_wide_vectors(crypt);
        }
        let _ = (len, crypt);
        None
    }

    /// The driver's encryption pool (wdm/encryption_pool.rs): the pieces run on its threads
    /// and on the caller's, which runs those no thread has taken and waits for the rest;
    /// without a pool, all on the caller's thread.
    #[inline(always)]
    fn run_pieces(&self, pieces: &mut [Piece<'_>], work: &(dyn Fn(&mut Piece<'_>) + Sync)) {
        match &self.encryption {
            Some(pool) => pool.run(pieces, work),
            None => pieces.iter_mut().for_each(work),
        }
    }
}

/// Active processors in all groups (KeQueryActiveProcessorCountEx), at least 1.
pub(crate) fn active_processors() -> usize {
    // SAFETY: no preconditions; callable at any IRQL.
    let count = unsafe { KeQueryActiveProcessorCountEx(ALL_PROCESSOR_GROUPS) };
    (count as usize).max(1)
}

/// The mounting user's security context (SeCreateClientSecurity), impersonated by the
/// threads that issue host I/O (docs/review.md R11).
#[cfg(not(feature = "wine-host"))]
pub struct ClientSecurity {
    context: Box<core::cell::UnsafeCell<wdk_sys::SECURITY_CLIENT_CONTEXT>>,
}

#[cfg(not(feature = "wine-host"))]
// SAFETY: after capture the context is only read (SeImpersonateClientEx), from any thread.
unsafe impl Send for ClientSecurity {}
#[cfg(not(feature = "wine-host"))]
// SAFETY: as above.
unsafe impl Sync for ClientSecurity {}

#[cfg(not(feature = "wine-host"))]
impl ClientSecurity {
    /// Captures the calling thread's security context (the mount IOCTL's caller).
    ///
    /// IRQL: PASSIVE_LEVEL, in the caller's thread.
    pub fn capture() -> Result<Arc<Self>, Status> {
        use wdk_sys::ntddk::SeCreateClientSecurity;
        let mut qos = wdk_sys::SECURITY_QUALITY_OF_SERVICE {
            Length: core::mem::size_of::<wdk_sys::SECURITY_QUALITY_OF_SERVICE>() as u32,
            ImpersonationLevel: wdk_sys::_SECURITY_IMPERSONATION_LEVEL::SecurityImpersonation,
            ContextTrackingMode: 0, // SECURITY_STATIC_TRACKING
            EffectiveOnly: 0,
        };
        // SAFETY: SECURITY_CLIENT_CONTEXT is a plain C struct; zero is valid before capture.
        let context: Box<core::cell::UnsafeCell<wdk_sys::SECURITY_CLIENT_CONTEXT>> =
            try_box(unsafe { core::mem::zeroed() })?;
        let thread = super::thread::current_thread();
        // SAFETY: `thread` is the current thread; `qos` and `context` are valid for the call.
        let status = unsafe { SeCreateClientSecurity(thread, &mut qos, 0, context.get()) };
        if status < 0 {
            return Err(Status::from_ntstatus(status as u32));
        }
        // A failure drops the context, which releases the token the capture referenced.
        try_arc(ClientSecurity { context })
    }

    /// Makes the current (system) thread impersonate the captured client, or says why not.
    ///
    /// IRQL: PASSIVE_LEVEL.
    pub fn impersonate(&self) -> Result<(), Status> {
        // SAFETY: a context captured by `capture`; NULL thread = the current thread.
        let status = unsafe {
            wdk_sys::ntddk::SeImpersonateClientEx(self.context.get(), core::ptr::null_mut())
        };
        if status < 0 {
            return Err(Status::from_ntstatus(status as u32));
        }
        Ok(())
    }

    /// Ends impersonation on the current thread.
    pub fn revert() {
        // SAFETY: no preconditions; a thread that does not impersonate is left as it is.
        unsafe { wdk_sys::ntddk::PsRevertToSelf() };
    }

    /// Runs `issue` on the calling (dispatching) thread impersonating the captured client,
    /// and gives the thread back exactly the context it had: PsDisableImpersonation saves its
    /// impersonation (token, level, copy-on-open, effective-only; the token referenced) and
    /// turns it off, SeImpersonateClientEx impersonates the mounting user, PsRevertToSelf ends
    /// that, and PsRestoreImpersonation puts the saved one back; all of it inside a critical
    /// region (no normal kernel APC runs as the mounting user) and with the thread's top-level
    /// IRP cleared (it is the caller's mark, not this request's). Only for a thread of the
    /// System process, attached to it (a file system's or the SMB server's worker, a system
    /// work item): user mode cannot open those threads (System is a protected process), so no
    /// other thread can copy or replace the token while this one impersonates, and they have
    /// no TEB whose impersonation flag PsRevertToSelf would clear. A thread of any other
    /// process is refused (its request goes to the workers): another of that process's
    /// threads could impersonate it (NtImpersonateThread) and so become the mounting user, or
    /// set its token before the call. After SeImpersonateClientEx the thread's impersonation
    /// token must be the captured one at SecurityImpersonation or above (not a copy the kernel
    /// made at a lower level), or `issue` does not run. `Err`: this thread may not, or the
    /// context could not be taken; `issue` did not run and the thread's own context is back.
    ///
    /// IRQL: PASSIVE_LEVEL.
    pub fn as_mounting_user<R>(&self, issue: impl FnOnce() -> R) -> Result<R, Status> {
        use wdk_sys::ntddk::{PsDisableImpersonation, PsRestoreImpersonation};
        let thread = super::thread::current_thread();
        if !on_system_process_thread(thread) {
            return Err(Status::DeviceBusy);
        }
        use wdk_sys::ntddk::{
            IoGetTopLevelIrp, IoSetTopLevelIrp, KeEnterCriticalRegion, KeLeaveCriticalRegion,
        };
        // No normal kernel APC runs on the borrowed thread while it is the mounting user.
        // SAFETY: PASSIVE_LEVEL; left below on every path.
        unsafe { KeEnterCriticalRegion() };
        // The caller's top-level IRP (a file system's or the cache manager's mark) is not
        // this request's: the host's stack, which reads it to detect recursion, sees none.
        // SAFETY: no preconditions; the current thread's field, restored below.
        let top_level = unsafe { IoGetTopLevelIrp() };
        // The cache manager's and the modified page writer's marks: paging I/O that reached
        // this volume without IRP_PAGING_IO (FastFAT leaves them set); the workers serve it.
        let mark = top_level as usize;
        if mark == wdk_sys::FSRTL_CACHE_TOP_LEVEL_IRP as usize
            || mark == wdk_sys::FSRTL_MOD_WRITE_TOP_LEVEL_IRP as usize
        {
            // SAFETY: paired with the KeEnterCriticalRegion above; nothing changed yet.
            unsafe { KeLeaveCriticalRegion() };
            return Err(Status::DeviceBusy);
        }
        // SAFETY: as above.
        unsafe { IoSetTopLevelIrp(core::ptr::null_mut()) };
        // SAFETY: SE_IMPERSONATION_STATE is a plain C struct; zero is valid before the call
        // fills it.
        let mut saved: wdk_sys::SE_IMPERSONATION_STATE = unsafe { core::mem::zeroed() };
        // SAFETY: the current thread; `saved` lives until PsRestoreImpersonation below.
        let impersonated = unsafe { PsDisableImpersonation(thread, &mut saved) } != 0;
        let ran = match self.impersonate() {
            Ok(()) if self.is_current_impersonation(thread) => Ok(issue()),
            Ok(()) => Err(Status::DeviceBusy),
            Err(status) => Err(status),
        };
        Self::revert();
        if impersonated {
            // SAFETY: the state PsDisableImpersonation saved for this thread, restored once.
            unsafe { PsRestoreImpersonation(thread, &mut saved) };
        }
        // SAFETY: the value read above, on the same thread.
        unsafe { IoSetTopLevelIrp(top_level) };
        // SAFETY: paired with the KeEnterCriticalRegion above.
        unsafe { KeLeaveCriticalRegion() };
        ran
    }

    /// True when `thread` impersonates exactly the captured token at SecurityImpersonation or
    /// above (not a copy the kernel made at a lower level).
    fn is_current_impersonation(&self, thread: wdk_sys::PETHREAD) -> bool {
        use wdk_sys::ntddk::{PsDereferenceImpersonationToken, PsReferenceImpersonationToken};
        let (mut copy_on_open, mut effective_only) = (0u8, 0u8);
        let mut level = wdk_sys::_SECURITY_IMPERSONATION_LEVEL::SecurityAnonymous;
        // SAFETY: the current thread; the out-parameters live across the call.
        let token = unsafe {
            PsReferenceImpersonationToken(
                thread,
                &mut copy_on_open,
                &mut effective_only,
                &mut level,
            )
        };
        if token.is_null() {
            return false;
        }
        // SAFETY: the captured context, only read.
        let captured = unsafe { (*self.context.get()).ClientToken };
        let same = token == captured
            && level >= wdk_sys::_SECURITY_IMPERSONATION_LEVEL::SecurityImpersonation;
        // SAFETY: the reference PsReferenceImpersonationToken took, dropped once.
        unsafe { PsDereferenceImpersonationToken(token) };
        same
    }
}

#[cfg(not(feature = "wine-host"))]
extern "C" {
    /// PsInitialSystemProcess (wdm.h), an exported variable: reached through its import slot,
    /// which the loader fills with the variable's address (a data import has no thunk, so the
    /// plain name does not link).
    #[link_name = "__imp_PsInitialSystemProcess"]
    static IMP_PS_INITIAL_SYSTEM_PROCESS: *const wdk_sys::PEPROCESS;
}

/// `thread` (the current one) belongs to the System process and runs attached to it
/// (IoThreadToProcess is its owner, IoGetCurrentProcess the process it is attached to; a
/// system thread created inside a user process, or a thread attached to System, is not one).
#[cfg(not(feature = "wine-host"))]
fn on_system_process_thread(thread: wdk_sys::PETHREAD) -> bool {
    use wdk_sys::ntddk::{IoGetCurrentProcess, IoThreadToProcess};
    // SAFETY: the import slot of an exported variable the kernel sets before any driver
    // loads and never changes: its address, then its value.
    let system = unsafe { *IMP_PS_INITIAL_SYSTEM_PROCESS };
    // SAFETY: the current thread; no preconditions.
    let owner = unsafe { IoThreadToProcess(thread) };
    // SAFETY: no preconditions; the current process, only compared.
    let attached = unsafe { IoGetCurrentProcess() };
    !system.is_null() && owner == system && attached == system
}

#[cfg(not(feature = "wine-host"))]
impl Drop for ClientSecurity {
    fn drop(&mut self) {
        // SeDeleteClientSecurity (a macro): drop the token reference the capture took.
        // SAFETY: the context was captured; its ClientToken is a referenced token object.
        let token = unsafe { (*self.context.get()).ClientToken };
        if !token.is_null() {
            // SAFETY: the one reference held by this context.
            unsafe { wdk_sys::ntddk::ObfDereferenceObject(token) };
        }
    }
}

/// wine-host build: Wine's SeCreateClientSecurity and SeImpersonateClientEx are stubs that
/// kill the process, so nothing is captured and nothing impersonated (sys/README.md).
#[cfg(feature = "wine-host")]
pub struct ClientSecurity;

#[cfg(feature = "wine-host")]
impl ClientSecurity {
    /// Nothing to capture under Wine.
    pub fn capture() -> Result<Arc<Self>, Status> {
        try_arc(ClientSecurity)
    }
    /// No impersonation under Wine.
    pub fn impersonate(&self) -> Result<(), Status> {
        Ok(())
    }
    /// No impersonation under Wine.
    pub fn revert() {}
    /// No impersonation under Wine: `issue` runs as it is.
    pub fn as_mounting_user<R>(&self, issue: impl FnOnce() -> R) -> Result<R, Status> {
        Ok(issue())
    }
}
