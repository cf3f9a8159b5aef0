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
    /// encryption pool's threads keep the default priority, as VeraCrypt's do.
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

    /// The driver's encryption pool (wdm/encryption_pool.rs): the pieces run on its threads
    /// while the caller waits; without a pool, on the caller's thread.
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
}
