//! DriverEntry, Unload and the control device `\Device\vcdirect` (`\\.\vcdirect`).
//!
//! Owns: creating and deleting the control device and its symbolic link, the dispatch table
//! (volume devices are handed to `disk`), the load line and the registry notes in the debugger
//! log, the table of mounted volumes with their owners, and the control IOCTLs of `abi`
//! (mount, dismount, list, status, gates get/set/reload, erase keys), one at a time under the
//! control mutex, each checked by `crate::access` for the caller `identity` reads. Unload
//! dismounts every volume.
//! Never: parses ABI buffers by hand (the `abi` module's strict parsers do; a malformed buffer
//! gets the ABI's status; `abi::buffer` copies requests out and wipes the system buffer),
//! decides who may do what (`crate::access`) or makes engine decisions.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt::Write;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};

use wdk_sys::ntddk::{
    DbgPrint, IoCreateDevice, IoCreateSymbolicLink, IoDeleteDevice, IoDeleteSymbolicLink,
    IoRegisterShutdownNotification, IoUnregisterShutdownNotification,
};
use wdk_sys::{
    DEVICE_OBJECT, DRIVER_OBJECT, FILE_DEVICE_SECURE_OPEN, FILE_DEVICE_UNKNOWN, IRP,
    IRP_MJ_CLEANUP, IRP_MJ_CLOSE, IRP_MJ_CREATE, IRP_MJ_DEVICE_CONTROL, IRP_MJ_FLUSH_BUFFERS,
    IRP_MJ_PNP, IRP_MJ_READ, IRP_MJ_SHUTDOWN, IRP_MJ_WRITE, NTSTATUS, PCUNICODE_STRING,
};

use super::codes::nts;
use super::disk::{self, VolumeDevice};
use super::dismount::KernelVolumeAbove;
use super::host::{KernelHost, OpenParams};
use super::identity::{self, DeviceAccess};
use super::irp::Irp;
use super::links::{fresh_uuid, KernelNamespace, DIRS};
use super::mutex::KernelMutex;
use super::platform::{ClientSecurity, KernelPlatform};
use super::registry::read_values;
use super::strings::{unicode, utf16};
use super::sync::SpinLock;
use super::thread::SystemThread;
use super::{nt, pool};
use crate::abi::buffer::Answer;
use crate::abi::{
    self, AbiError, EmptyRequest, EraseReply, GatesMessage, ListEntry, ListReply, MountReply,
    MountRequest, StatusReply, Target, VolumeRequest, DISMOUNT_FORCE, MOUNT_HIDDEN,
    MOUNT_PROTECT_HIDDEN, MOUNT_READ_ONLY, MOUNT_SHARED,
};
use crate::access::{self, Caller, Operation, Sid};
use crate::control::last_reference::delete_when_sole;
use crate::control::order::{self, Candidate, Next};
use crate::control::pending::{self, ControlLocks, OpenedHost, Pending, SHUTTING_DOWN};
use crate::control::shutdown::{self as shut, DismountAll, Picked, ShutdownSide};
use crate::dismount::{self as sequence, Teardown};
use crate::namespace::{UniqueId, VolumeNames};
use crate::platform::{Lock, Thread, UpperRequest};
use crate::registry::{Config, Gate, Gates, Note, Tunables, ALL_VALUE_NAMES, DRIVER_GATES};
use crate::volume::{MountParams, Volume};
use crate::Status;

/// Pool tag of every allocation of the driver ("vcDr" in pool tools).
pub const DRIVER_TAG: u32 = u32::from_le_bytes(*b"vcDr");

static DEVICE_NAME: [u16; 16] = utf16("\\Device\\vcdirect");
static LINK_NAME: [u16; 20] = utf16("\\DosDevices\\vcdirect");

/// The control device, for Unload.
static CONTROL_DEVICE: AtomicPtr<DEVICE_OBJECT> = AtomicPtr::new(core::ptr::null_mut());
/// W3: a dismount left its file system (or a forced dismount's open files) holding a reference
/// to a deleted volume device (`crate::dismount::keeps_driver`): DriverUnload stays cleared for
/// the rest of the boot (the image is never unloaded once this is set, so the static lives as long).
static UNLOAD_DISABLED: AtomicBool = AtomicBool::new(false);

/// W3: mounts between their `hold_unload` and their entry in the table (or their failure):
/// while one is, a dismount of the last volume must not give DriverUnload back. Changed only
/// inside the table's spin lock.
static MOUNTS_HOLDING: AtomicUsize = AtomicUsize::new(0);
/// The driver's state (from DriverEntry to Unload).
static STATE: AtomicPtr<DriverState> = AtomicPtr::new(core::ptr::null_mut());

/// What the driver keeps between DriverEntry and Unload.
struct DriverState {
    driver: *mut DRIVER_OBJECT,
    control: NonNull<DEVICE_OBJECT>,
    /// The service key path (RegistryPath), for gate reloads.
    registry_path: Vec<u16>,
    /// Tunables read once at DriverEntry.
    tunables: Tunables,
    volumes: SpinLock<Vec<Entry>>,
    next_id: AtomicU32,
    /// Serializes the control IOCTLs (W4): two mounts cannot race for a letter or an id.
    control_mutex: KernelMutex,
    /// Serializes the dismount IOCTLs' hand-off to their system thread: the join of the
    /// previous dismount thread (up to about 20 s for a forced dismount whose file system
    /// keeps refusing) happens under it, never under `control_mutex`, so list, status and
    /// mount go on meanwhile. Neither is taken under the other's hold by the dismount and
    /// shutdown paths; Unload takes `dismount_mutex` before it joins the dismount threads.
    dismount_mutex: KernelMutex,
    /// Dismount IOCTLs that claimed their volume (under the control mutex) and have not yet
    /// handed it to their thread (under the dismount mutex): shutdown waits for them, so no
    /// claimed volume is left mounted behind its forced dismount of every volume.
    claims_pending: AtomicUsize,
    /// The system thread of the last dismount IOCTL (W1), joined by the next one and by
    /// Unload, so none runs in the image after it is gone (W3).
    workers: SpinLock<Vec<SystemThread>>,
    /// Mounts between their claim and their publish (R13: a mount opens and probes its host
    /// without the control mutex, `crate::control::pending`); closed by shutdown and Unload.
    pending: SpinLock<Pending>,
    /// Shutdown's dismount thread when its bounded wait ran out: it runs on with everything it
    /// uses (`crate::control::shutdown`); Unload (if it ever comes) joins it.
    shutdown_worker: SpinLock<Option<SystemThread>>,
}

/// The control mutex and the mounts in progress, as `crate::control::pending::mount` takes
/// them.
struct Locks<'a>(&'a DriverState);

impl ControlLocks for Locks<'_> {
    fn serialized<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.control_mutex.with(f)
    }
    fn pending<R>(&self, f: impl FnOnce(&mut Pending) -> R) -> R {
        self.0.pending.with(f)
    }
    fn hold_host(&self, host: usize) -> Option<u32> {
        self.0.volumes.with(|v| {
            let e = v
                .iter_mut()
                .find(|e| e.device.device_object().as_ptr() as usize == host)?;
            e.closing += 1;
            Some(e.device.mounted().id)
        })
    }
    fn release_host(&self, id: u32) {
        self.0.volumes.with(|v| {
            if let Some(e) = v.iter_mut().find(|e| e.device.mounted().id == id) {
                e.closing = e.closing.saturating_sub(1);
            }
        });
    }
}

/// A mounted volume in the table: its device and the user who mounted it (W4).
struct Entry {
    device: Arc<VolumeDevice>,
    owner: Sid,
    /// A dismount runs for it (a second one is refused as in use; shutdown skips it).
    dismounting: bool,
    /// W1: volumes whose host file lives on this one that left the table and whose host is
    /// not closed yet (their device is being deleted), and mounts whose host file lives on it
    /// from their open's return until they are in the table or undone (`Locks::hold_host`):
    /// the forced dismount of every volume does not start this one meanwhile (its lock would
    /// race that close).
    closing: u32,
}

/// W1: the forced dismount of every volume orders the table by the host relation
/// (`crate::control::order`): a volume whose host file lives on another volume's device goes
/// first.
impl Candidate for Entry {
    fn id(&self) -> u32 {
        self.device.mounted().id
    }
    fn busy(&self) -> bool {
        self.dismounting
    }
    fn hosted_on(&self, other: &Self) -> bool {
        let below = self.device.mounted().volume.host().own_volume_below();
        below == Some(other.device.device_object().as_ptr() as usize)
    }
    fn hosts_one_closing(&self) -> bool {
        self.closing > 0
    }
}

/// A dismount IOCTL's volume, claimed in the caller's thread (checks done), done on a system
/// thread.
struct Claim {
    device: Arc<VolumeDevice>,
    force: bool,
}

impl Entry {
    fn is(&self, target: Target) -> bool {
        match target {
            Target::Id(id) => self.device.mounted().id == id,
            Target::Letter(c) => self.device.mounted().drive_letter == Some(c),
        }
    }
}

fn state() -> Option<&'static DriverState> {
    let p = STATE.load(Ordering::Acquire);
    // SAFETY: set once in DriverEntry before any dispatch routine can run, freed in Unload
    // after the last one returned (the I/O manager unloads only an idle driver).
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The Wine build's registry switch for `Fault::W5KeyCopyOnMountStack`.
#[cfg(feature = "wine-host")]
const W5_BY_VALUE_NAME: &str = "VcdirectWineFaultKeyCopyOnStack";

/// DbgPrints one line (no `%` interpretation: the text goes through `%.*s`).
fn log(line: &str) {
    // SAFETY: NUL-terminated format; `%.*s` gets an int length and a pointer to that many
    // bytes of `line`.
    unsafe { DbgPrint(c"%.*s\n".as_ptr(), line.len() as i32, line.as_ptr()) };
}

/// One log line formatted into a fixed buffer (W6: logging allocates nothing). The longest
/// note (a value name of 39 characters with its reason) is about 125 bytes; a longer line is
/// cut at a character boundary.
struct Line {
    bytes: [u8; 160],
    len: usize,
}

impl Line {
    fn as_str(&self) -> &str {
        core::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let room = self.bytes.len() - self.len;
        let mut take = s.len().min(room);
        while !s.is_char_boundary(take) {
            take -= 1;
        }
        self.bytes[self.len..self.len + take].copy_from_slice(&s.as_bytes()[..take]);
        self.len += take;
        Ok(())
    }
}

/// Not inlined: its line buffer stays out of the control IOCTL handler's frame (W13).
#[inline(never)]
fn log_notes(notes: impl IntoIterator<Item = Note>) {
    for note in notes {
        let mut line = Line {
            bytes: [0; 160],
            len: 0,
        };
        let _ = write!(line, "{note}");
        log(line.as_str());
    }
}

/// Which build this image is (see sys/README.md).
const BUILD: &core::ffi::CStr = if cfg!(feature = "wine-host") {
    c"wine-host"
} else {
    c"product"
};

/// The body of `DriverEntry` (the exported symbol lives in the `sys/` crate).
///
/// IRQL: PASSIVE_LEVEL, in the system process, as the I/O manager calls DriverEntry.
///
/// # Safety
/// `driver` is the driver object the I/O manager passed to DriverEntry.
pub unsafe fn driver_entry(
    driver: *mut DRIVER_OBJECT,
    registry_path: PCUNICODE_STRING,
) -> NTSTATUS {
    #[cfg(target_arch = "aarch64")]
    if let Err(status) = super::arm64::require_aes_instructions() {
        return status;
    }
    let has_pool2 = pool::resolve();
    // W6, Wine build: the engine's fallible allocations ask the glue's injection from now on.
    #[cfg(feature = "wine-host")]
    pool::injection::install();
    // SAFETY: the I/O manager passes a valid UNICODE_STRING (Length in bytes) or NULL.
    let given: &[u16] = match unsafe { registry_path.as_ref() } {
        Some(p) if !p.Buffer.is_null() => {
            // SAFETY: `Buffer` holds `Length` bytes of UTF-16 for the duration of DriverEntry.
            unsafe { core::slice::from_raw_parts(p.Buffer, usize::from(p.Length) / 2) }
        }
        _ => &[],
    };
    // W6: what DriverEntry keeps (the registry path's copy, the control KMUTEX) is allocated
    // fallibly before anything is created, so a failure has nothing to undo.
    let registry_path: Vec<u16> = match crate::io::try_vec(given.len()) {
        Ok(mut v) => {
            v.extend_from_slice(given);
            v
        }
        Err(status) => return nt(status),
    };
    let control_mutex = match KernelMutex::try_new() {
        Ok(m) => m,
        Err(status) => return nt(status),
    };
    let dismount_mutex = match KernelMutex::try_new() {
        Ok(m) => m,
        Err(status) => return nt(status),
    };

    let mut device_name = unicode(&DEVICE_NAME);
    let mut device: *mut DEVICE_OBJECT = core::ptr::null_mut();
    // SAFETY: `driver` is our driver object (contract); the name is a static string; no
    // device extension; the out pointer is valid.
    let status = unsafe {
        IoCreateDevice(
            driver,
            0,
            &mut device_name,
            FILE_DEVICE_UNKNOWN,
            FILE_DEVICE_SECURE_OPEN,
            0,
            &mut device,
        )
    };
    if status < 0 {
        return status;
    }
    let mut link_name = unicode(&LINK_NAME);
    // SAFETY: both names describe static strings.
    let status = unsafe { IoCreateSymbolicLink(&mut link_name, &mut device_name) };
    if status < 0 {
        // SAFETY: `device` was created above and nothing else references it yet.
        unsafe { IoDeleteDevice(device) };
        return status;
    }
    // W4: system and administrators, and interactive users for read and write; what each
    // IOCTL may do is then the policy's decision.
    // SAFETY: the device created above, not deleted.
    if let Err(status) = unsafe { identity::protect(device, DeviceAccess::Control) } {
        // SAFETY: the link made above.
        let _ = unsafe { IoDeleteSymbolicLink(&mut link_name) };
        // SAFETY: the device created above; nothing else references it yet.
        unsafe { IoDeleteDevice(device) };
        return nt(status);
    }
    // Tunables once, gates now and on each reload; each odd value logged once (R8). W6: a
    // map that cannot be allocated fails DriverEntry, the link and device undone.
    let values = match read_values(&registry_path, &ALL_VALUE_NAMES) {
        Ok(values) => values,
        Err(status) => {
            // SAFETY: the link made above.
            let _ = unsafe { IoDeleteSymbolicLink(&mut link_name) };
            // SAFETY: the device created above; nothing else references it yet.
            unsafe { IoDeleteDevice(device) };
            return nt(status);
        }
    };
    CONTROL_DEVICE.store(device, Ordering::Release);
    let (_, tunables, notes) = Config::load(&values);
    let reload = DRIVER_GATES.reload(&values);
    log_notes(notes);
    // W9, wine-host build: the checks are on; the fault switches (DWORDs of the service key,
    // read with the same code; absent or 0: off).
    #[cfg(feature = "wine-host")]
    {
        use super::irql::Fault;
        use crate::registry::RegistrySource;
        super::irql::announce();
        let names = Fault::ALL.map(Fault::value_name);
        let switches = read_values(&registry_path, &names).unwrap_or_else(|_| {
            log("vcdirect: W9 fault switches not read (no memory): all off");
            crate::registry::ValueMap::new()
        });
        for fault in Fault::ALL {
            let on = switches
                .query(fault.value_name())
                .and_then(|raw| crate::registry::read_dword(raw).ok())
                .is_some_and(|v| v != 0);
            if on {
                fault.turn_on();
            }
        }
        // W5: the switch that leaves a copy of the cipher on the mounting thread's stack
        // (w5-wine-key-bytes-switch-caught).
        let w5 = read_values(&registry_path, &[W5_BY_VALUE_NAME]).ok();
        let on = w5
            .as_ref()
            .and_then(|v| v.query(W5_BY_VALUE_NAME))
            .and_then(|raw| crate::registry::read_dword(raw).ok())
            .is_some_and(|v| v != 0);
        if on && crate::faults::wine_host::turn_on(crate::faults::Fault::W5KeyCopyOnMountStack) {
            log("vcdirect: W5 fault switch on: VcdirectWineFaultKeyCopyOnStack");
        }
    }
    let Some(control) = NonNull::new(device) else {
        return nt(Status::InsufficientResources);
    };
    // W6: the driver's state in a fallible pool block; on failure the link and the control
    // device are undone (the KMUTEX and the registry path's copy go with the value).
    let state = pool::try_box(DriverState {
        driver,
        control,
        registry_path,
        tunables,
        volumes: SpinLock::new(Vec::new()),
        // W2: device names never repeat across driver loads (the mount manager would answer a
        // known name from its record); without a fresh UUID, ids start at 1 as before.
        next_id: AtomicU32::new(match fresh_uuid() {
            Ok(seed) => crate::namespace::first_volume_id(seed),
            Err(_) => {
                log("vcdirect: ExUuidCreate failed: volume ids start at 1");
                1
            }
        }),
        control_mutex,
        dismount_mutex,
        claims_pending: AtomicUsize::new(0),
        workers: SpinLock::new(Vec::new()),
        pending: SpinLock::new(Pending::new()),
        shutdown_worker: SpinLock::new(None),
    });
    let state = match state {
        Ok(state) => state,
        Err(status) => {
            CONTROL_DEVICE.store(core::ptr::null_mut(), Ordering::Release);
            // SAFETY: the link made above.
            let _ = unsafe { IoDeleteSymbolicLink(&mut link_name) };
            // SAFETY: the device created above; no handle can be open to it yet (DriverEntry
            // has not returned, so no dispatch routine was reachable).
            unsafe { IoDeleteDevice(device) };
            return nt(status);
        }
    };
    STATE.store(Box::into_raw(state), Ordering::Release);
    let _ = reload;
    // W1: IRP_MJ_SHUTDOWN reaches the control device when shutdown begins; every volume is
    // then dismounted, forced, as VeraCrypt does when shutdown is pending.
    // SAFETY: our control device, alive until Unload unregisters it.
    if unsafe { IoRegisterShutdownNotification(device) } < 0 {
        log("vcdirect: IoRegisterShutdownNotification failed: no dismount at shutdown");
    }
    // The encryption pool, as VeraCrypt starts it at load: CPUs - free CPU count threads.
    super::encryption_pool::start_driver_pool(
        super::platform::active_processors(),
        tunables.free_cpu_count as usize,
    );

    // SAFETY: we own the driver object's dispatch table during DriverEntry.
    unsafe {
        let driver = &mut *driver;
        for major in [
            IRP_MJ_CREATE,
            IRP_MJ_CLOSE,
            IRP_MJ_CLEANUP,
            IRP_MJ_READ,
            IRP_MJ_WRITE,
            IRP_MJ_FLUSH_BUFFERS,
            // W10: the device-usage notification a file system forwards to a volume device.
            IRP_MJ_PNP,
        ] {
            driver.MajorFunction[major as usize] = Some(dispatch_create_close);
        }
        driver.MajorFunction[IRP_MJ_DEVICE_CONTROL as usize] = Some(dispatch_device_control);
        driver.MajorFunction[IRP_MJ_SHUTDOWN as usize] = Some(dispatch_shutdown);
        driver.DriverUnload = Some(driver_unload);
    }

    let backend = crate::crypto::backend();
    let allocator = if has_pool2 {
        c"ExAllocatePool2"
    } else {
        c"ExAllocatePoolWithTag"
    };
    // SAFETY: NUL-terminated format; `%.*s` gets an int length and a pointer to that many
    // bytes of a static str; `%s` arguments are NUL-terminated static C strings.
    unsafe {
        DbgPrint(
            c"vcdirect: loaded (%s build, crypto backend %.*s, pool %s)\n".as_ptr(),
            BUILD.as_ptr(),
            backend.len() as i32,
            backend.as_ptr(),
            allocator.as_ptr(),
        )
    };
    #[cfg(feature = "wine-host")]
    self_test(device);
    nt(Status::Success)
}

/// Runs the wrappers' self-test and prints its result (wine-host build only).
#[cfg(feature = "wine-host")]
fn self_test(device: *mut DEVICE_OBJECT) {
    let Some(device) = NonNull::new(device) else {
        return;
    };
    // SAFETY: the control device lives until Unload, and the platform is dropped at the end of
    // this function, after every thread and work item of the test finished.
    let Ok(platform) = (unsafe { KernelPlatform::new(device, None) }) else {
        return;
    };
    match super::selftest::run(&platform) {
        // SAFETY: NUL-terminated format with one `%u` argument.
        Ok(cpus) => unsafe {
            DbgPrint(
                c"vcdirect: self-test passed (%u cpus)\n".as_ptr(),
                cpus as u32,
            )
        },
        // SAFETY: `%.*s` gets an int length and a pointer to that many bytes of a static str.
        Err(step) => unsafe {
            DbgPrint(
                c"vcdirect: self-test FAILED: %.*s\n".as_ptr(),
                step.len() as i32,
                step.as_ptr(),
            )
        },
    };
}

unsafe extern "C" fn driver_unload(_driver: *mut DRIVER_OBJECT) {
    if let Some(state) = state() {
        // No mount publishes from here on. None is in progress: a mount IOCTL holds a handle
        // to the control device, and the I/O manager unloads only a driver none is open on.
        close_table(state, nts::DELETE_PENDING);
        // W3: Unload runs only with no volume mounted (it is cleared meanwhile); dismounting
        // whatever is left is the defensive path (W1, forced), after the last dismount
        // thread (and shutdown's, if its wait ran out) finished.
        if let Some(worker) = state.shutdown_worker.with(Option::take) {
            worker.join();
        }
        // Under the dismount mutex: a dismount IOCTL's hand-off (`start_dismount`) spawns its
        // thread and then stores it in `workers` under this mutex, so none is missed here.
        state.dismount_mutex.with(|| {
            for worker in state.workers.with(core::mem::take) {
                worker.join();
            }
        });
        dismount_all_forced(state);
        // SAFETY: the control device registered in DriverEntry, not deleted yet.
        unsafe { IoUnregisterShutdownNotification(state.control.as_ptr()) };
    }
    let p = STATE.swap(core::ptr::null_mut(), Ordering::AcqRel);
    if !p.is_null() {
        // SAFETY: the Box leaked in DriverEntry; no dispatch routine runs during Unload.
        drop(unsafe { Box::from_raw(p) });
    }
    // Every volume is dismounted: nothing runs crypto any more.
    super::encryption_pool::stop_driver_pool();
    // A child request's completion routine signals (its event, or the remove-lock release of
    // a detached request) as its last call, a few instructions before it returns; dismount
    // waited for the signal. Storage completions mostly run in DPCs: KeFlushQueuedDpcs
    // returns once the DPCs queued before it have run. Not covered: a routine that runs on a
    // thread (a filter completing from its own worker, Driver Verifier's deferred
    // completions) and is preempted between its signal and its return, while the image goes;
    // IoSetCompletionRoutineEx would cover it at the price of an allocation per request,
    // which W6 rules out (sys/README.md).
    #[cfg(not(feature = "wine-host"))]
    // SAFETY: no preconditions at PASSIVE_LEVEL (Unload).
    unsafe {
        wdk_sys::ntddk::KeFlushQueuedDpcs()
    };
    let mut link_name = unicode(&LINK_NAME);
    // SAFETY: the link was created in DriverEntry (Unload only runs after it succeeded).
    // Nothing to do if it fails: the link is gone or was never made.
    let _ = unsafe { IoDeleteSymbolicLink(&mut link_name) };
    let device = CONTROL_DEVICE.swap(core::ptr::null_mut(), Ordering::AcqRel);
    if !device.is_null() {
        // SAFETY: our control device; the I/O manager calls Unload only when no handle to it
        // is open and no work item holds it.
        unsafe { IoDeleteDevice(device) };
    }
    // W9, wine-host build: threads left raised, and the summary (checks made, violations).
    #[cfg(feature = "wine-host")]
    super::irql::at_unload();
    // SAFETY: NUL-terminated format without arguments.
    unsafe { DbgPrint(c"vcdirect: unloaded\n".as_ptr()) };
}

/// Takes ownership of the IRP the I/O manager passed to a dispatch routine.
///
/// # Safety
/// `irp` is the IRP passed to the dispatch routine being run.
unsafe fn owned(irp: *mut IRP) -> Option<Irp> {
    // SAFETY: per the contract the IRP is ours until completed, and wrapped only here.
    NonNull::new(irp).map(|irp| unsafe { Irp::from_raw(irp) })
}

unsafe extern "C" fn dispatch_create_close(device: *mut DEVICE_OBJECT, irp: *mut IRP) -> NTSTATUS {
    // SAFETY: one of our devices, as the I/O manager passed it.
    if unsafe { disk::is_volume_device(device) } {
        // SAFETY: a volume device of ours and its IRP, as the I/O manager passed them.
        return unsafe { disk::dispatch(device, irp) };
    }
    // SAFETY: called by the I/O manager with an IRP for our control device.
    let Some(irp) = (unsafe { owned(irp) }) else {
        return nt(Status::InvalidParameter);
    };
    let status = match u32::from(irp.major_function()) {
        IRP_MJ_CREATE | IRP_MJ_CLOSE | IRP_MJ_CLEANUP => Status::Success,
        _ => Status::InvalidDeviceRequest,
    };
    irp.complete(status, 0);
    nt(status)
}

unsafe extern "C" fn dispatch_device_control(
    device: *mut DEVICE_OBJECT,
    irp: *mut IRP,
) -> NTSTATUS {
    // SAFETY: one of our devices, as the I/O manager passed it.
    if unsafe { disk::is_volume_device(device) } {
        // SAFETY: a volume device of ours and its IRP, as the I/O manager passed them.
        return unsafe { disk::dispatch(device, irp) };
    }
    // SAFETY: called by the I/O manager with an IRP for our control device.
    let Some(mut irp) = (unsafe { owned(irp) }) else {
        return nt(Status::InvalidParameter);
    };
    let mut claim = None;
    let (status, information) = control_ioctl(state(), &mut irp, &mut claim);
    match (state(), claim) {
        (Some(state), Some(claim)) if status.is_success() => start_dismount(state, claim, irp),
        (state, claim) => {
            // A claim whose IOCTL failed afterwards (its reply did not fit) gives the volume
            // back: it stays mounted, dismountable again.
            if let (Some(state), Some(claim)) = (state, claim) {
                unclaim(state, &claim.device);
                state.claims_pending.fetch_sub(1, Ordering::AcqRel);
            }
            irp.complete(status, information);
            nt(status)
        }
    }
}

/// IRP_MJ_SHUTDOWN (W1): every volume dismounted, forced, before the system goes down.
///
/// IRQL: PASSIVE_LEVEL, in a system thread, as the I/O manager sends the shutdown IRP to each
/// registered device.
unsafe extern "C" fn dispatch_shutdown(device: *mut DEVICE_OBJECT, irp: *mut IRP) -> NTSTATUS {
    // SAFETY: one of our devices, as the I/O manager passed it.
    if unsafe { disk::is_volume_device(device) } {
        // SAFETY: a volume device of ours and its IRP, as the I/O manager passed them.
        return unsafe { disk::dispatch(device, irp) };
    }
    // SAFETY: called by the I/O manager with an IRP for our control device.
    let Some(irp) = (unsafe { owned(irp) }) else {
        return nt(Status::InvalidParameter);
    };
    if let Some(state) = state() {
        log("vcdirect: shutdown: dismounting every volume (forced)");
        // No mount publishes and no dismount is claimed from here on (both look under the
        // control mutex; closing takes only the table's spin lock, so a publish waiting on
        // the mount manager does not hold shutdown up). Mounts still opening their hosts give
        // their volumes back when their opens return; nobody waits for them.
        let opening = close_table(state, SHUTTING_DOWN);
        if opening > 0 {
            // SAFETY: NUL-terminated format with one `%u` argument.
            unsafe {
                DbgPrint(
                    c"vcdirect: shutdown: %u mounts in progress will not publish\n".as_ptr(),
                    opening,
                )
            };
        }
        // The dismounts run on a thread of ours; shutdown waits for it a bounded time only.
        match shut::shutdown(&KernelShutdown(state), shut::SHUTDOWN_WAIT_MS) {
            shut::Outcome::Finished => log("vcdirect: shutdown: every volume dismounted"),
            shut::Outcome::Inline => {
                log("vcdirect: shutdown: no thread: every volume dismounted on shutdown's")
            }
            // SAFETY: NUL-terminated format with two `%u` arguments.
            shut::Outcome::Left(n) => unsafe {
                DbgPrint(
                    c"vcdirect: shutdown: %u volumes left mounted after %u ms; shutdown goes on\n"
                        .as_ptr(),
                    n as u32,
                    shut::SHUTDOWN_WAIT_MS,
                );
            },
        }
    }
    irp.complete(Status::Success, 0);
    nt(Status::Success)
}

/// Shutdown's side of `crate::control::shutdown`: its dismount thread, the bounded wait on it
/// (a thread of this driver: R13), and the volumes left.
struct KernelShutdown(&'static DriverState);

impl ShutdownSide for KernelShutdown {
    type Worker = SystemThread;
    fn start(&self) -> Result<SystemThread, Status> {
        // W6: the body is allocated fallibly; without it (or a thread) the dismounts run on
        // shutdown's thread.
        let body = pool::try_box(|| {
            // The driver state outlives this thread: Unload joins it before freeing it.
            if let Some(state) = state() {
                shutdown_dismounts(state);
            }
        })?;
        SystemThread::spawn(body)
    }
    fn wait(&self, worker: &SystemThread, ms: Option<u32>) -> bool {
        worker.wait_for(ms)
    }
    fn run_here(&self) {
        shutdown_dismounts(self.0);
    }
    fn keep(&self, worker: SystemThread) {
        // It runs on with its references (nothing it uses is freed); Unload would join it.
        self.0.shutdown_worker.with(|w| *w = Some(worker));
    }
    fn each_left(&self, f: &mut dyn FnMut(u32)) {
        // One id at a time out of the spin lock (the log is written outside it), in id order:
        // the next id above the last one, so entries the kept threads remove meanwhile skip
        // no other volume and repeat none (no allocation; O(n²) over a few volumes).
        let mut last: Option<u32> = None;
        while let Some(id) = self.0.volumes.with(|v| {
            v.iter()
                .map(|e| e.device.mounted().id)
                .filter(|id| last.is_none_or(|l| *id > l))
                .min()
        }) {
            f(id);
            last = Some(id);
        }
    }
    fn log_left(&self, id: u32, waited_ms: u32) {
        // SAFETY: NUL-terminated format with two `%u` arguments.
        unsafe {
            DbgPrint(
                c"vcdirect: shutdown: VcVolume%u not dismounted after %u ms: left as it is\n"
                    .as_ptr(),
                id,
                waited_ms,
            )
        };
    }
}

/// Shutdown and Unload close the table: no mount publishes and no dismount is claimed from
/// here on. Taken under the table's spin lock, then the pending one (the order the publish's
/// push and the dismount claim take them), so each of those decided either before the close
/// (the volume in the table, the claim counted) or after it (refused). Returns the mounts in
/// progress.
fn close_table(state: &DriverState, why: Status) -> u32 {
    state.volumes.with(|_| state.pending.with(|p| p.close(why)))
}

/// Shutdown's dismount thread: every volume, forced, in host order (each on a thread of its
/// own, so one that never finishes holds up only the volumes its host lives on), then the
/// dismount IOCTLs' threads joined; again while a claim was handed back.
///
/// IRQL: PASSIVE_LEVEL, on a system thread of this driver.
fn shutdown_dismounts(state: &DriverState) {
    // No barrier: a publish or a dismount claim decided under the table's spin lock before
    // the close (`close_table`) has its volume in the table or its claim counted.
    loop {
        dismount_all_forced(state);
        state.dismount_mutex.with(|| {
            for worker in state.workers.with(core::mem::take) {
                worker.join();
            }
        });
        let claimed = state.claims_pending.load(Ordering::Acquire) != 0;
        // A dismount IOCTL refused (not forced) gives its volume back: dismounted here next.
        if !claimed && state.volumes.with(|v| v.iter().all(|e| e.dismounting)) {
            break;
        }
        super::dismount::wait_ms(10);
    }
}

/// W3: DriverUnload is cleared while any volume is mounted (a legacy driver cannot veto an
/// unload, and the I/O manager does not unload a driver without one) and restored after the
/// last dismount, unless a dismount latched [`UNLOAD_DISABLED`]. Called inside the table's
/// spin lock, with `mounted` = the table not empty, so a mount and the last dismount cannot
/// interleave their decisions.
fn allow_unload(state: &DriverState, mounted: bool) {
    let unload = !mounted
        && MOUNTS_HOLDING.load(Ordering::Acquire) == 0
        && !UNLOAD_DISABLED.load(Ordering::Acquire);
    let routine: Option<unsafe extern "C" fn(*mut DRIVER_OBJECT)> = unload.then_some(driver_unload);
    // SAFETY: `state.driver` is our driver object, alive as long as the driver is loaded;
    // taking a field's address touches nothing.
    let field = unsafe { &raw mut (*state.driver).DriverUnload };
    // SAFETY: a pointer-sized aligned store (atomic on every supported architecture) to our
    // driver object's field. The I/O manager reads it when `sc stop` asks for an unload (a NULL
    // routine refuses the stop) and again when a deferred unload completes (it calls the
    // routine only when not NULL); a read racing this store sees the old or the new value,
    // never a torn one. A stop that read the routine just before a mount cleared it is caught
    // by the mount's probe (`hold_unload`). Any IRQL (a plain store).
    unsafe { core::ptr::write_volatile(field, routine) };
}

/// W3, a mount racing `sc stop`: clears DriverUnload (before the volume device is created), then
/// opens `\Device\vcdirect` from the kernel. An unload that was accepted before the clear has
/// marked the control device unload-pending, and every open of it then fails: the mount is
/// refused (STATUS_DELETE_PENDING) and DriverUnload restored (unless volumes are mounted or the
/// latch is set), so the deferred unload runs when the caller closes its handle, with nothing
/// mounted. [`restore_unload`] undoes the hold when the mount fails later.
///
/// IRQL: PASSIVE_LEVEL, in the caller's thread (the mount IOCTL).
fn hold_unload(state: &DriverState) -> Result<(), Status> {
    state.volumes.with(|_| {
        MOUNTS_HOLDING.fetch_add(1, Ordering::AcqRel);
        allow_unload(state, true);
    });
    match probe_control_device() {
        Ok(()) => Ok(()),
        Err(_) => {
            restore_unload(state);
            log("vcdirect: mount refused: the driver is being unloaded");
            Err(nts::DELETE_PENDING)
        }
    }
}

/// Ends a failed mount's hold: gives DriverUnload back when no volume is mounted, no other
/// mount holds it and the latch is not set.
fn restore_unload(state: &DriverState) {
    state.volumes.with(|v| {
        MOUNTS_HOLDING.fetch_sub(1, Ordering::AcqRel);
        allow_unload(state, !v.is_empty());
    });
}

/// Opens and closes `\Device\vcdirect` with a kernel handle (FILE_READ_ATTRIBUTES): fails
/// once the I/O manager marked the device unload-pending.
///
/// IRQL: PASSIVE_LEVEL.
#[cfg(not(feature = "wine-host"))]
fn probe_control_device() -> Result<(), Status> {
    use super::host::{zw_open, ZwName, ZwOpen};
    use wdk_sys::ntddk::ZwClose;
    use wdk_sys::{FILE_READ_ATTRIBUTES, FILE_SHARE_READ, FILE_SHARE_WRITE};
    // The IRP_MJ_CREATE it sends reaches our own control device, whose dispatch completes it
    // without taking the control mutex (this thread does not hold it here either: the probe
    // runs during the host open, outside it). PASSIVE_LEVEL.
    let handle = zw_open(
        ZwName::Static(&DEVICE_NAME),
        ZwOpen {
            access: FILE_READ_ATTRIBUTES,
            share: FILE_SHARE_READ | FILE_SHARE_WRITE,
            options: 0,
            as_caller: false,
        },
    )?;
    // SAFETY: the kernel handle opened above, closed once.
    let _ = unsafe { ZwClose(handle) };
    Ok(())
}

/// The wine-host build skips the probe: Wine 8.0 keeps no unload-pending state (a stop of a
/// driver service without DriverUnload is ignored, w3-sc-stop-while-mounted), and a kernel open
/// of our own device from inside our own dispatch routine would wait for the winedevice
/// dispatch loop that is running it.
#[cfg(feature = "wine-host")]
fn probe_control_device() -> Result<(), Status> {
    Ok(())
}

/// Pends the dismount IOCTL and runs the dismount on a system thread (W1): the FSCTLs it
/// sends to the volume must not run in a dispatch routine (under Wine one dispatch loop serves
/// the process; on Windows the filesystem may write through our own device meanwhile). The
/// previous dismount's thread is joined first (it has completed its IRP, or is about to), so
/// at most one thread object is kept, and Unload joins that one. The join and the hand-off run
/// under the dismount mutex, not the control mutex: a forced dismount that waits for its file
/// system (up to about 20 s) holds up the next dismount, never list, status or mount.
///
/// IRQL: PASSIVE_LEVEL, in the caller's thread.
fn start_dismount(ds: &'static DriverState, claim: Claim, mut irp: Irp) -> NTSTATUS {
    irp.mark_pending();
    // W6: the IRP's slot and the thread's body are allocated fallibly; without them the
    // volume is unclaimed and the IRP fails with STATUS_INSUFFICIENT_RESOURCES.
    let slot = match pool::try_arc(SpinLock::new(None::<Irp>)) {
        Ok(slot) => slot,
        Err(status) => {
            unclaim(ds, &claim.device);
            ds.claims_pending.fetch_sub(1, Ordering::AcqRel);
            irp.complete(status, 0);
            return nts::PENDING;
        }
    };
    slot.with(|s| *s = Some(irp));
    let device = Arc::clone(&claim.device);
    ds.dismount_mutex.with(|| {
        for previous in ds.workers.with(core::mem::take) {
            previous.join();
        }
        let mut keep = Vec::new();
        let spawned = keep
            .try_reserve(1)
            .map_err(|_| Status::InsufficientResources)
            .and_then(|_| {
                let slot = Arc::clone(&slot);
                pool::try_box(move || {
                    // The driver state outlives this thread: Unload joins it before freeing it.
                    let status = match state() {
                        Some(st) => match dismount_volume(st, claim.device, claim.force) {
                            Ok(()) => Status::Success,
                            Err(status) => status,
                        },
                        None => Status::DeviceNotReady,
                    };
                    if let Some(irp) = slot.with(Option::take) {
                        irp.complete(status, 0);
                    }
                })
            })
            .and_then(|body| SystemThread::spawn(body));
        match spawned {
            Ok(thread) => {
                keep.push(thread);
                ds.workers.with(|w| core::mem::swap(w, &mut keep));
            }
            Err(status) => {
                // The thread never ran its body: nothing changed; the IRP fails here.
                unclaim(ds, &device);
                if let Some(irp) = slot.with(Option::take) {
                    irp.complete(status, 0);
                }
            }
        }
        // Handed over (or given back): shutdown no longer waits for this claim.
        ds.claims_pending.fetch_sub(1, Ordering::AcqRel);
    });
    nts::PENDING
}

/// Gives a claimed volume back (its dismount was refused or never started).
fn unclaim(state: &DriverState, device: &Arc<VolumeDevice>) {
    state.volumes.with(|v| {
        if let Some(e) = v.iter_mut().find(|e| Arc::ptr_eq(&e.device, device)) {
            e.dismounting = false;
        }
    });
}

/// The table's side of a dismount: the volume's drain, its links, and the device's deletion
/// with its table entry.
struct TableTeardown<'a> {
    state: &'a DriverState,
    device: core::cell::RefCell<Option<Arc<VolumeDevice>>>,
    id: u32,
}

impl Teardown for TableTeardown<'_> {
    fn keep_driver_loaded(&self) {
        if !UNLOAD_DISABLED.swap(true, Ordering::AcqRel) {
            // SAFETY: NUL-terminated format with one `%u` argument.
            unsafe {
                DbgPrint(
                    c"vcdirect: unload disabled until reboot (a file system may keep deleted VcVolume%u referenced)\n"
                        .as_ptr(),
                    self.id,
                )
            };
        }
    }
    fn drain(&self) {
        if let Some(d) = self.device.borrow().as_ref() {
            d.mounted().volume.dismount();
        }
    }
    fn remove_links(&self) {
        if let Some(d) = self.device.borrow().as_ref() {
            d.remove_links();
        }
    }
    fn delete_device(&self) {
        let Some(ours) = self.device.borrow_mut().take() else {
            return;
        };
        // W1: the volume our host file lives on (if any, and still in the table) counts us as
        // closing until our host is closed below, so a forced dismount of every volume does
        // not lock it before that.
        let below = ours.mounted().volume.host().own_volume_below();
        let (entry, host_id) = self.state.volumes.with(|v| {
            let entry = v
                .iter()
                .position(|e| Arc::ptr_eq(&e.device, &ours))
                .map(|at| v.remove(at));
            let host = below.and_then(|b| {
                v.iter_mut()
                    .find(|e| e.device.device_object().as_ptr() as usize == b)
            });
            let host_id = host.map(|e| {
                e.closing += 1;
                e.device.mounted().id
            });
            allow_unload(self.state, !v.is_empty());
            (entry, host_id)
        });
        drop(entry);
        // W1: a status or erase-keys IOCTL that found the volume before its entry went may
        // hold a reference for a moment (only while it builds its reply, under the control
        // mutex, waiting on nothing of ours): wait until ours is the last, so its Drop
        // deletes the device here, before the handle is closed and the dismount completes,
        // never afterwards in that IOCTL's thread (`crate::control::last_reference`). The
        // device is deleted and our host closed in there (the last reference).
        delete_when_sole(ours, || super::dismount::wait_ms(1));
        if let Some(id) = host_id {
            self.state.volumes.with(|v| {
                if let Some(e) = v.iter_mut().find(|e| e.device.mounted().id == id) {
                    e.closing = e.closing.saturating_sub(1);
                }
            });
        }
        // SAFETY: NUL-terminated format with one `%u` argument.
        unsafe { DbgPrint(c"vcdirect: VcVolume%u deleted\n".as_ptr(), self.id) };
    }
}

/// Runs the engine's dismount sequence (`crate::dismount::run`) for a claimed volume: lock,
/// dismount (forced: even when the lock failed), drain, links, delete, then the handle closed.
/// Refused (STATUS_DEVICE_BUSY): the volume stays mounted and is unclaimed. `device` moves
/// into the teardown, so its `delete_device` drops the last reference (the device is deleted
/// there, before the handle is closed, not when this function returns).
///
/// IRQL: PASSIVE_LEVEL. Threads: our dismount thread (the dismount IOCTL), and the threads of
/// `dismount_all_forced` (shutdown's dismount thread, Unload); none holds the control mutex,
/// so a sequence waiting for its file system or its host holds up no control IOCTL (and the
/// last-reference wait in `TableTeardown::delete_device` never waits for its own holder).
fn dismount_volume(
    state: &DriverState,
    device: Arc<VolumeDevice>,
    force: bool,
) -> Result<(), Status> {
    let (id, mut above, teardown) = above_and_teardown(state, device);
    match sequence::run(&mut above, &teardown, force) {
        Ok(report) => {
            log_dismount(id, &report);
            Ok(())
        }
        Err(status) => {
            // A refused dismount never deleted the device: the teardown still holds it.
            if let Some(device) = teardown.device.borrow().as_ref() {
                unclaim(state, device);
            }
            // SAFETY: NUL-terminated format with two u32 arguments.
            unsafe {
                DbgPrint(
                    c"vcdirect: dismount VcVolume%u refused: in use (0x%08x)\n".as_ptr(),
                    id,
                    status.ntstatus(),
                )
            };
            Err(status)
        }
    }
}

/// The volume's id, the volume above its device and the table's teardown of it, for the
/// engine's sequences (`dismount_volume`, `undo_publish`). `device` moves into the teardown.
/// The two must go to the same sequence together: `above`'s device pointer stays valid only
/// until that sequence's `delete_device`, which it calls after its last look through `above`.
fn above_and_teardown(
    state: &DriverState,
    device: Arc<VolumeDevice>,
) -> (u32, KernelVolumeAbove, TableTeardown<'_>) {
    let id = device.mounted().id;
    // SAFETY: the teardown's reference (and the table's, while there is an entry) keeps the
    // device undeleted until its `delete_device`; the engine's sequences make every request
    // and VPB look through `above` before that, and `release` does not touch the device.
    let above = unsafe { KernelVolumeAbove::new(device.device_object(), device.mounted()) };
    let teardown = TableTeardown {
        state,
        device: core::cell::RefCell::new(Some(device)),
        id,
    };
    (id, above, teardown)
}

/// One debugger line for a completed dismount: what the file system answered (`ffffffff`: a
/// request not sent). DbgPrint's own formatting, not core::fmt (W13's stack budget).
fn log_dismount(id: u32, report: &sequence::Report) {
    let code = |r: Option<Result<(), Status>>| match r {
        Some(Ok(())) => 0,
        Some(Err(s)) => s.ntstatus(),
        None => u32::MAX,
    };
    let forced = if report.forced { c", forced" } else { c"" };
    // SAFETY: NUL-terminated format; `%u`/`%x` get u32 arguments, `%s` a NUL-terminated
    // static C string.
    unsafe {
        DbgPrint(
            c"vcdirect: dismount VcVolume%u: lock 0x%08x, dismount 0x%08x%s\n".as_ptr(),
            id,
            code(Some(report.lock)),
            code(report.dismount),
            forced.as_ptr(),
        )
    };
}

/// Undoes a mount whose device was published but whose links could not all be made (or whose
/// entry shutdown or Unload refused after the links were made), in the engine's order (`crate::dismount::undo_failed_publish`): the links and the mount manager's
/// record first, then the forced W1 sequence only if a file system mounted on the volume
/// (the device's VPB), else drain and delete without opening it, latching the driver if a
/// file system mounted in between (W3).
///
/// IRQL: PASSIVE_LEVEL, on the mounting caller's thread, without the control mutex (the
/// opened value's drop, after `crate::control::pending::mount` released it; R13: a host that
/// stalls the drain or its close holds up only this mount): the links' removal waits at most
/// its memory budgets (about 2 s, and 2 s more to reopen the mount manager), a forced sequence
/// at most 200 x 100 ms more.
fn undo_publish(state: &DriverState, device: Arc<VolumeDevice>) {
    let (id, mut above, teardown) = above_and_teardown(state, device);
    match sequence::undo_failed_publish(&mut above, &teardown) {
        sequence::Undone::Forced(report) => log_dismount(id, &report),
        sequence::Undone::Plain { late_mount } => {
            let late = if late_mount {
                c" (a file system mounted meanwhile)"
            } else {
                c""
            };
            // SAFETY: NUL-terminated format; a u32 and a NUL-terminated static C string.
            unsafe {
                DbgPrint(
                    c"vcdirect: VcVolume%u undone after a failed publish%s\n".as_ptr(),
                    id,
                    late.as_ptr(),
                )
            };
        }
    }
}

/// Dismounts every volume no dismount runs for, forced (shutdown, Unload), in the order of
/// the host relation (`crate::control::order`: a volume whose host file lives on another of
/// our volumes goes first, whatever the ids), each on a system thread of its own as soon as
/// nothing still in the table lives on it (`crate::control::shutdown::dismount_all`), and
/// returns once each has finished.
///
/// IRQL: PASSIVE_LEVEL (Unload, shutdown's dismount thread).
fn dismount_all_forced(state: &DriverState) {
    shut::dismount_all(&ForcedAll {
        state,
        started: SpinLock::new(Vec::new()),
    });
}

/// The table's side of `crate::control::shutdown::dismount_all`.
struct ForcedAll<'a> {
    state: &'a DriverState,
    /// The threads started, joined at the end.
    started: SpinLock<Vec<SystemThread>>,
}

impl DismountAll for ForcedAll<'_> {
    type Volume = Arc<VolumeDevice>;
    fn next(&self) -> Picked<Arc<VolumeDevice>> {
        self.state.volumes.with(|v| match order::decide(v) {
            Next::Dismount(at) => {
                v[at].dismounting = true;
                Picked::Dismount(Arc::clone(&v[at].device))
            }
            Next::Wait => Picked::Wait,
            Next::Done => Picked::Done,
        })
    }
    fn start(&self, device: Arc<VolumeDevice>) -> Result<(), Arc<VolumeDevice>> {
        // W6: the thread's room and body are allocated fallibly; without them (or a thread)
        // the dismount runs on the calling thread.
        if self.started.with(|s| s.try_reserve(1)).is_err() {
            return Err(device);
        }
        let back = Arc::clone(&device);
        let body = pool::try_box(move || {
            // The driver state outlives this thread: `join_started` joins it before the
            // caller (Unload, or shutdown's thread, which Unload joins) returns.
            if let Some(state) = state() {
                let _ = dismount_volume(state, device, true);
            }
        });
        match body.and_then(|body| SystemThread::spawn(body)) {
            Ok(thread) => {
                // The sequence's delete waits for this reference too (`delete_when_sole`).
                drop(back);
                self.started.with(|s| s.push(thread));
                Ok(())
            }
            Err(_) => Err(back),
        }
    }
    fn dismount_here(&self, device: Arc<VolumeDevice>) {
        let _ = dismount_volume(self.state, device, true);
    }
    fn pause(&self) {
        super::dismount::wait_ms(10);
    }
    fn join_started(&self) {
        for thread in self.started.with(core::mem::take) {
            thread.join();
        }
    }
}

/// What a handler returns: the reply (W6: a fixed-size one allocates nothing, a built one
/// was allocated fallibly), or the status to fail with.
type Reply = Result<Answer, Status>;

fn abi_err(e: AbiError) -> Status {
    e.status()
}

/// Runs one control IOCTL (under the control mutex, but a mount's host open and probe: R13).
/// Input is copied out of the system buffer,
/// which is then wiped, before the reply is written over it; a reply larger than the caller's
/// output buffer is STATUS_BUFFER_TOO_SMALL. With no driver state (not ready) or an unknown
/// code the system buffer is wiped all the same and the request refused.
///
/// IRQL: PASSIVE_LEVEL, in the caller's thread (a top-level driver's device control).
fn control_ioctl(
    state: Option<&DriverState>,
    irp: &mut Irp,
    claim: &mut Option<Claim>,
) -> (Status, usize) {
    let (code, input_len, output_len) = irp.ioctl_parameters();
    let known = matches!(
        code,
        abi::IOCTL_MOUNT
            | abi::IOCTL_DISMOUNT
            | abi::IOCTL_LIST
            | abi::IOCTL_STATUS
            | abi::IOCTL_GATES_GET
            | abi::IOCTL_GATES_SET
            | abi::IOCTL_GATES_RELOAD
            | abi::IOCTL_ERASE_KEYS
    );
    let state = match state {
        Some(state) if known => Ok(state),
        Some(_) => Err(Status::InvalidDeviceRequest),
        None => Err(Status::DeviceNotReady),
    };
    let state = match state {
        Ok(state) => state,
        Err(status) => {
            // W5: no request byte stays in the buffer on a refused path either; the one wipe
            // (`serve`) with a handler that refuses (no input copied).
            return match irp.system_buffer() {
                Some(buf) => abi::buffer::serve(buf, 0, 0, |_, _| Err(status)),
                None => (status, 0),
            };
        }
    };
    let Some(buf) = irp.system_buffer() else {
        // METHOD_BUFFERED with both lengths zero: an empty input, which no request accepts.
        return (
            abi_err(AbiError::WrongSize {
                expected: EmptyRequest::SIZE,
                got: 0,
            }),
            0,
        );
    };
    // W5: `serve` copies the input out and zeroes the whole system buffer before the handler
    // runs, so no request byte (a mount's key) is left in it on any path out.
    abi::buffer::serve(
        buf,
        input_len as usize,
        output_len as usize,
        |input, output_len| {
            let caller = identity::caller()?;
            match code {
                // R13: a mount takes the control mutex itself for the steps that need it,
                // never while it opens and probes its host (`mount_volume`).
                abi::IOCTL_MOUNT => mount(state, &caller, input, output_len),
                _ => state
                    .control_mutex
                    .with(|| handle(state, &caller, code, input, output_len, claim)),
            }
        },
    )
}

/// Runs one control IOCTL but a mount for `caller`, who the policy checks before anything
/// changes, under the control mutex.
fn handle(
    state: &DriverState,
    caller: &Caller,
    code: u32,
    input: &[u8],
    output_len: usize,
    claim: &mut Option<Claim>,
) -> Reply {
    match code {
        abi::IOCTL_DISMOUNT => claim_dismount(state, caller, input, claim),
        abi::IOCTL_LIST => list(state, caller, input, output_len),
        abi::IOCTL_STATUS => status(state, caller, input, output_len),
        abi::IOCTL_GATES_GET => {
            access::check(caller, Operation::GatesGet)?;
            EmptyRequest::parse(input)
                .map_err(abi_err)
                .map(|_| gates_message(DRIVER_GATES.snapshot()))
        }
        abi::IOCTL_GATES_SET => {
            access::check(caller, Operation::GatesSet)?;
            let g = GatesMessage::parse(input).map_err(abi_err)?;
            // Bad input loses nothing: the reply must fit before the gates change.
            Answer::small_fits(output_len)?;
            DRIVER_GATES.publish(Gates {
                read: g.read,
                write: g.write,
            });
            Ok(gates_message(DRIVER_GATES.snapshot()))
        }
        abi::IOCTL_GATES_RELOAD => {
            access::check(caller, Operation::GatesReload)?;
            EmptyRequest::parse(input).map_err(abi_err)?;
            Answer::small_fits(output_len)?;
            let names = [Gate::Read.value_name(), Gate::Write.value_name()];
            // W6: a map that cannot be allocated fails the IOCTL, the gates unchanged.
            let values = read_values(&state.registry_path, &names)?;
            let reload = DRIVER_GATES.reload(&values);
            log_notes(reload.reading.notes());
            Ok(gates_message(reload.gates))
        }
        abi::IOCTL_ERASE_KEYS => {
            access::check(caller, Operation::EraseKeys)?;
            EmptyRequest::parse(input).map_err(abi_err)?;
            // Bad input loses nothing: the reply must fit before a key is erased.
            Answer::small_fits(output_len)?;
            // W6: the volumes' references are taken into room allocated fallibly, under the
            // table's lock (nonpaged pool; no room, no key erased: the caller is told).
            let all = state.volumes.with(|v| {
                let mut all: Vec<Arc<VolumeDevice>> = crate::io::try_vec(v.len())?;
                // R3: a mount claimed before now (opening its host without the control mutex)
                // is refused at its publish, its key erased (`Pending::keys_erased`); this
                // IOCTL and the publishes run under the control mutex.
                state.pending.with(Pending::keys_erased);
                all.extend(v.iter().map(|e| Arc::clone(&e.device)));
                Ok::<_, Status>(all)
            })?;
            for v in &all {
                v.mounted().volume.erase_keys();
            }
            Ok(Answer::Small(
                EraseReply {
                    volumes: all.len() as u32,
                }
                .build(),
            ))
        }
        _ => Err(Status::InvalidDeviceRequest),
    }
}

fn gates_message(g: Gates) -> Answer {
    Answer::Small(
        GatesMessage {
            read: g.read,
            write: g.write,
        }
        .build(),
    )
}

/// The volume `target` names, if `caller` may read its status (W4): not found, or
/// STATUS_ACCESS_DENIED for another user's volume.
fn find_for_status(
    state: &DriverState,
    caller: &Caller,
    target: Target,
) -> Result<Arc<VolumeDevice>, Status> {
    state.volumes.with(|v| {
        let entry = v.iter().find(|e| e.is(target)).ok_or(nts::NOT_FOUND)?;
        access::check(caller, Operation::Status(&entry.owner))?;
        Ok(Arc::clone(&entry.device))
    })
}

fn mount(state: &DriverState, caller: &Caller, input: &[u8], output_len: usize) -> Reply {
    // W9, wine-host build only: the deliberately wrong call of the fault switch (nothing
    // unless VcdirectWineFaultWaitInsideSpinLock is set), before anything else of a mount.
    #[cfg(feature = "wine-host")]
    super::irql::fault_wait_inside_spin_lock();
    // W6 (Wine build): the registry may name a fallible allocation of this mount to fail.
    #[cfg(feature = "wine-host")]
    {
        use pool::injection::{HANDOFF_VALUE_NAME, VALUE_NAME};
        let values = read_values(&state.registry_path, &[VALUE_NAME, HANDOFF_VALUE_NAME])
            .unwrap_or_default();
        use crate::registry::RegistrySource as _;
        let dword = |name| {
            values
                .query(name)
                .and_then(|raw| crate::registry::read_dword(raw).ok())
                .unwrap_or(0)
        };
        let fail_at = dword(VALUE_NAME);
        pool::injection::arm(fail_at, dword(HANDOFF_VALUE_NAME));
        let result = mount_volume(state, caller, input, output_len);
        let counts = pool::injection::disarm();
        let failed = matches!(result, Err(Status::InsufficientResources));
        // SAFETY: NUL-terminated format with four `%u` arguments.
        unsafe {
            DbgPrint(
                c"vcdirect: W6 mount asked %u fallible allocations, failed at %u; %u try_arc, %u reserved blocks handed to Arc::new\n".as_ptr(),
                counts.asked as u32,
                if failed { fail_at } else { 0 },
                counts.arcs as u32,
                counts.handed as u32,
            )
        };
        result
    }
    #[cfg(not(feature = "wine-host"))]
    mount_volume(state, caller, input, output_len)
}

/// A mount (R13: no control mutex while the host is opened and probed): its checks, unique id
/// and letter claim under the control mutex; the host's open and probe, the volume and its
/// still initializing device without it (`open_volume`); the publish under the mutex again
/// (`publish_volume`), or, when shutdown or Unload closed the table meanwhile, everything
/// given back (STATUS_SYSTEM_SHUTDOWN). The sequence is `crate::control::pending::mount`.
fn mount_volume(state: &DriverState, caller: &Caller, input: &[u8], output_len: usize) -> Reply {
    let request = MountRequest::parse(input, cfg!(feature = "wine-host")).map_err(abi_err)?;
    // Refused before any host open.
    access::check(caller, Operation::Mount)?;
    if output_len < MountReply::SIZE {
        return Err(nts::BUFFER_TOO_SMALL);
    }
    let letter = request.drive_letter;
    let unique_id = core::cell::Cell::new(None);
    let reply = pending::mount(
        &Locks(state),
        letter,
        || {
            unique_id.set(Some(check_mount(state, letter)?));
            Ok(())
        },
        || {
            let id = unique_id.take().ok_or(Status::InvalidParameter)?;
            open_volume(state, caller, &request, id)
        },
        |opened| publish_volume(state, opened),
    );
    // W5 fault switch (Wine build only, compiled out of product images: check-sys.sh refuses a
    // product map naming `fault_key_copy_on_stack`): the mount's last call leaves a copy of the
    // cipher on this thread's stack.
    #[cfg(feature = "wine-host")]
    if reply.is_ok() && crate::faults::is_on(crate::faults::Fault::W5KeyCopyOnMountStack) {
        fault_key_copy_on_stack(request.algorithm, &request.key);
    }
    reply
}

/// A mount's checks under the control mutex: the letter free (the table, and any link of
/// that name the caller could see), and the mount manager's unique id of the volume. A letter
/// claimed by a mount in progress is refused by the claim that follows.
#[inline(never)]
fn check_mount(state: &DriverState, letter: Option<char>) -> Result<UniqueId, Status> {
    if let Some(c) = letter {
        // Any user's volume holds the letter.
        if state
            .volumes
            .with(|v| v.iter().any(|e| e.is(Target::Letter(c))))
        {
            return Err(nts::OBJECT_NAME_COLLISION);
        }
        // W2: a link of that name anywhere the caller could see it (global, or its logon
        // session's, checked in its thread), before anything of the mount is created.
        crate::namespace::letter_free(&KernelNamespace, &DIRS, c)?;
    }
    // W2: the mount manager's unique id of this volume: its letter's (one database entry per
    // letter, whatever the number of mounts), or fresh bytes without a letter (never the slot).
    // A mounted volume may answer the letter's id already (moved to another letter with
    // mountvol): then fresh bytes, so one id never belongs to two live volumes. A mount in
    // progress holds another letter (the claim), so it never has this letter's id.
    let live = |id: &UniqueId| {
        state.volumes.with(|v| {
            v.iter()
                .any(|e| e.device.mounted().names.unique_id() == id.as_bytes())
        })
    };
    UniqueId::for_mount(letter, live, fresh_uuid)
}

/// A mount's volume and device, made without the control mutex and not yet published. Dropped
/// unpublished (a failure, or shutdown meanwhile), it deletes the device (which dismounts the
/// volume and closes the host) and ends the mount's DriverUnload hold.
struct Opened<'a> {
    state: &'a DriverState,
    device: Option<Arc<VolumeDevice>>,
    owner: Sid,
    id: u32,
    letter: Option<char>,
    /// Its device was published (links, the mount manager's record) but the volume never
    /// reached the table: dropped, it is undone (`undo_publish`).
    published: bool,
}

/// W1: the volume of ours its host file lives on counts it until it is in the table or undone.
impl OpenedHost for Opened<'_> {
    fn host_volume(&self) -> Option<usize> {
        let device = self.device.as_ref()?;
        device.mounted().volume.host().own_volume_below()
    }
}

/// Dropped by `crate::control::pending::mount` after the control mutex is released (R13:
/// the undo drains the volume, joins its threads and closes its host, which may stall).
impl Drop for Opened<'_> {
    fn drop(&mut self) {
        if let Some(device) = self.device.take() {
            if self.published {
                // Not in the table: the undo's delete drops the device's only reference.
                undo_publish(self.state, device);
            } else {
                // Never published: no link, no file system; its only reference. Its key is
                // erased first (R3: refused because erase-keys ran meanwhile, among others).
                device.mounted().volume.erase_keys();
                drop(device);
            }
            restore_unload(self.state);
        }
    }
}

/// The part of a mount that may wait on its host, in the caller's thread without the control
/// mutex: the user's context, the host's open and probe, the volume, and its device created
/// still initializing (no links). Everything fallible of the mount but the table's room and
/// the links happens here.
// Not inlined: the opened host and the mount's parameters stay out of the frames above it,
// and the device's names out of this one's callee chain (W13).
#[inline(never)]
fn open_volume<'a>(
    state: &'a DriverState,
    caller: &Caller,
    request: &MountRequest,
    unique_id: UniqueId,
) -> Result<Opened<'a>, Status> {
    let opened = open_host_volume(state, request)?;
    create_volume_device(state, caller, request, unique_id, opened)
}

/// The rest of `open_volume` once the volume is mounted: the unload hold, the owner, the id
/// and the device, still initializing. A frame of its own, beside the host's open rather than
/// above it, so the device's names are not on the stack while the volume is built (W13).
#[inline(never)]
fn create_volume_device<'a>(
    state: &'a DriverState,
    caller: &Caller,
    request: &MountRequest,
    unique_id: UniqueId,
    (volume, flags, read_only): (Arc<Volume<KernelPlatform>>, u32, bool),
) -> Result<Opened<'a>, Status> {
    // W3: no unload may start from here on (DriverUnload cleared before the device exists), and
    // none may be pending already (the probe).
    if let Err(status) = hold_unload(state) {
        volume.dismount();
        return Err(status);
    }
    // W6: the owner's SID copied for the entry (asks the injection).
    let owner = match caller.sid.try_clone() {
        Ok(owner) => owner,
        Err(status) => {
            volume.dismount();
            restore_unload(state);
            return Err(status);
        }
    };
    let id = state.next_id.fetch_add(1, Ordering::AcqRel);
    // W6: the names are allocated fallibly, and `create` makes the links' names and records'
    // room (kept in the device), so nothing of ours allocates after `publish`.
    let device = VolumeNames::new(id, request.drive_letter, unique_id).and_then(|names| {
        // SAFETY: `state.driver` is our driver object.
        unsafe {
            VolumeDevice::create(
                state.driver,
                id,
                flags,
                names,
                read_only,
                Arc::clone(&volume),
                &caller.sid,
            )
        }
    });
    let device = match device {
        Ok(d) => d,
        Err(status) => {
            volume.dismount();
            restore_unload(state);
            return Err(status);
        }
    };
    // W5, Wine build: where this volume's round keys live, for the memory check
    // (w5-wine-key-bytes-*): the one block every copy of them must be in.
    #[cfg(feature = "wine-host")]
    if let Some((at, len)) = volume.key().block() {
        // SAFETY: NUL-terminated format; `%u` gets a u32, `%p` a pointer-sized value.
        unsafe {
            DbgPrint(
                c"vcdirect: W5 key block of volume %u at %p, %u bytes\n".as_ptr(),
                id,
                at as *const u8,
                len as u32,
            )
        };
    }
    // W6: the device is still initializing and has no links: a failure drops it, which
    // dismounts the volume and deletes the device (PASSIVE_LEVEL, here).
    let device = match pool::try_arc(device) {
        Ok(device) => device,
        Err(status) => {
            restore_unload(state);
            return Err(status);
        }
    };
    Ok(Opened {
        state,
        device: Some(device),
        owner,
        id,
        letter: request.drive_letter,
        published: false,
    })
}

/// The host's open and probe and the volume on it (`open_volume`'s first part): the volume,
/// its `MOUNT_*` flags and whether it is read-only.
#[inline(never)]
fn open_host_volume(
    state: &DriverState,
    request: &MountRequest,
) -> Result<(Arc<Volume<KernelPlatform>>, u32, bool), Status> {
    let asked_read_only = request.flags & MOUNT_READ_ONLY != 0;
    // R11: the mounting user's context, captured in the caller's thread.
    let security = ClientSecurity::capture()?;
    let host = KernelHost::open(&OpenParams {
        path: &request.host_path,
        read_only: asked_read_only,
        shared: request.flags & MOUNT_SHARED != 0,
        wine_driver_name: &request.wine_host_driver_name,
        own_driver: state.driver,
    })?;
    // W11: a write-protected raw host is mounted read-only, as VeraCrypt does (the volume
    // device gets FILE_READ_ONLY_DEVICE, writes fail with STATUS_MEDIA_WRITE_PROTECTED, the
    // status reports read-only). The handle keeps the access it was opened with.
    let read_only = asked_read_only || host.write_protected();
    let flags = match read_only {
        true => request.flags | MOUNT_READ_ONLY,
        false => request.flags,
    };
    if read_only && !asked_read_only {
        log("vcdirect: the host is write-protected: mounted read-only");
    }
    crate::volume::geometry::check_sector_size(request.sector_size, &host)?;
    let (protected_offset, protected_size) = request.protected_range;
    let params = MountParams {
        data_offset: request.data_offset,
        data_size: request.data_size,
        sector_size: request.sector_size,
        read_only,
        hidden: request.flags & MOUNT_HIDDEN != 0,
        protected_range: (request.flags & MOUNT_PROTECT_HIDDEN != 0)
            .then(|| protected_offset..protected_offset.saturating_add(protected_size)),
        gates: DRIVER_GATES.snapshot(),
        tunables: state.tunables,
        algorithm: request.algorithm,
    };
    // SAFETY: the control device outlives every volume (Unload dismounts them first). The
    // completion stage makes its own pool of `max_work_items` (`Platform::work_items`).
    let platform = unsafe { KernelPlatform::new(state.control, Some(security)) }?;
    let volume = Volume::mount(platform, host, &request.key, params)?;
    Ok((volume, flags, read_only))
}

/// The end of a mount, under the control mutex: the table's room, the links, the entry. On
/// failure the opened value goes back to `crate::control::pending::mount`, which drops it (the
/// device deleted, or undone when published) after the mutex is released.
#[inline(never)]
fn publish_volume<'a>(
    state: &'a DriverState,
    mut opened: Opened<'a>,
) -> Result<Answer, (Status, Option<Opened<'a>>)> {
    // W6: the volume table's room for this entry, reserved under the control mutex (publishes
    // run one at a time under it; removals only free room), so the push below allocates
    // nothing.
    if let Err(status) = reserve_entry(state) {
        return Err((status, Some(opened)));
    }
    let Some(device) = opened.device.take() else {
        return Err((Status::InvalidParameter, Some(opened)));
    };
    let entry = Entry {
        device,
        owner: opened.owner.clone(),
        dismounting: false,
        closing: 0,
    };
    if let Err(status) = entry.device.publish() {
        // DriverUnload stays cleared (this mount's hold) until the undo.
        opened.device = Some(entry.device);
        opened.published = true;
        return Err((status, Some(opened)));
    }
    // Shutdown's and Unload's close of the table takes this spin lock before the pending one:
    // a volume is either in the table before the close (their dismount of every volume finds
    // it) or refused here, with no barrier on the control mutex.
    let pushed = state.volumes.with(|v| {
        if let Err(status) = state.pending.with(|p| p.may_publish()) {
            return Err((status, entry));
        }
        v.push(entry);
        // The hold ends as the volume is in the table: it keeps DriverUnload cleared itself.
        MOUNTS_HOLDING.fetch_sub(1, Ordering::AcqRel);
        allow_unload(state, true);
        Ok(())
    });
    if let Err((status, entry)) = pushed {
        opened.device = Some(entry.device);
        opened.published = true;
        return Err((status, Some(opened)));
    }
    // W6: a fixed-size reply: nothing can fail once the volume is in the table.
    Ok(Answer::Small(
        MountReply {
            volume_id: opened.id,
            drive_letter: opened.letter,
        }
        .build(),
    ))
}

/// The deliberate bug of `Fault::W5KeyCopyOnMountStack`: the cipher built by value in this
/// frame and never wiped. Called last in a mount, so nothing of the mount runs deeper
/// afterwards and the copy stays until the thread's next request (the Wine memory check,
/// w5-wine-key-bytes-switch-caught, must find it). Wine build only.
#[cfg(feature = "wine-host")]
#[inline(never)]
fn fault_key_copy_on_stack(algorithm: crate::crypto::Algorithm, key: &[u8]) {
    let by_value = crate::crypto::VolumeCipher::new(algorithm, key);
    core::mem::forget(core::hint::black_box(by_value));
}

/// Reserves the volume table's room for one more entry (W6: fallible, and asks the Wine
/// build's allocation-failure injection like every fallible allocation of a mount).
fn reserve_entry(state: &DriverState) -> Result<(), Status> {
    if crate::faults::allocation_fails() {
        return Err(Status::InsufficientResources);
    }
    state
        .volumes
        .with(|v| v.try_reserve(1))
        .map_err(|_| Status::InsufficientResources)
}

/// The dismount IOCTL's checks, in the caller's thread: the volume exists (else
/// STATUS_NOT_FOUND, nothing changed), the caller may dismount it (W4), no other dismount runs
/// for it (else in use). The volume is then claimed; the dismount itself runs on a system
/// thread (`start_dismount`), where the filesystem decides whether it is in use (W1).
fn claim_dismount(
    state: &DriverState,
    caller: &Caller,
    input: &[u8],
    claim: &mut Option<Claim>,
) -> Reply {
    let request = VolumeRequest::parse(input).map_err(abi_err)?;
    let force = request.flags & DISMOUNT_FORCE != 0;
    let device = state.volumes.with(|v| {
        // Shutdown or Unload dismounts every volume itself: no new claim once it began. Their
        // close takes this spin lock before the pending one, so a claim is either counted in
        // `claims_pending` before the close (shutdown waits for it) or refused.
        state.pending.with(|p| p.may_publish())?;
        let entry = v
            .iter_mut()
            .find(|e| e.is(request.target))
            .ok_or(nts::NOT_FOUND)?;
        access::check(caller, Operation::Dismount(&entry.owner))?;
        if entry.dismounting {
            return Err(sequence::IN_USE);
        }
        entry.dismounting = true;
        // Shutdown waits for this claim until its thread has it (`start_dismount`), or until
        // the IOCTL gives it back (`dispatch_device_control`).
        state.claims_pending.fetch_add(1, Ordering::AcqRel);
        Ok(Arc::clone(&entry.device))
    })?;
    *claim = Some(Claim { device, force });
    Ok(Answer::Empty)
}

// Not inlined into `handle`: its reply's values stay out of the mount's frame (W13).
#[inline(never)]
fn list(state: &DriverState, caller: &Caller, input: &[u8], output_len: usize) -> Reply {
    EmptyRequest::parse(input).map_err(abi_err)?;
    access::check(caller, Operation::List)?;
    // W4: a caller sees only their own volumes unless privileged.
    // W6: the entries' room is allocated fallibly, under the table's lock (nonpaged pool).
    let entries = state.volumes.with(|v| {
        let mut entries = crate::io::try_vec(v.len())?;
        entries.extend(
            v.iter()
                .filter(|e| caller.sees(&e.owner))
                .map(|e| &e.device)
                .map(|d| ListEntry {
                    volume_id: d.mounted().id,
                    flags: d.mounted().flags,
                    drive_letter: d.mounted().drive_letter,
                    letter_kind: d.letter_kind(),
                }),
        );
        Ok::<_, Status>(entries)
    })?;
    ListReply {
        entries,
        unload_disabled: UNLOAD_DISABLED.load(Ordering::Acquire),
    }
    .build(output_len)
    .map(Answer::Built)
    .map_err(abi_err)
}

// Not inlined into `handle`: its reply's values stay out of the mount's frame (W13).
#[inline(never)]
fn status(state: &DriverState, caller: &Caller, input: &[u8], output_len: usize) -> Reply {
    let request = VolumeRequest::parse(input).map_err(abi_err)?;
    let device = find_for_status(state, caller, request.target)?;
    let m = device.mounted();
    let gates = m.volume.effective().gates;
    let name = crate::crypto::backend().as_bytes();
    let mut backend = crate::io::try_vec(name.len())?;
    backend.extend_from_slice(name);
    StatusReply {
        volume_id: m.id,
        flags: m.flags,
        gates: GatesMessage {
            read: gates.read,
            write: gates.write,
        },
        drive_letter: m.drive_letter,
        backend,
        counters: m.volume.counters.snapshot(),
        data_size: m.volume.size(),
        // An older vcctl's buffer has room for the first layout only: it gets exactly that.
        memory: (output_len >= StatusReply::SIZE_V2).then(|| m.volume.memory()),
        later_counters: output_len >= StatusReply::SIZE,
    }
    .build()
    .map(Answer::Built)
    .map_err(abi_err)
}
