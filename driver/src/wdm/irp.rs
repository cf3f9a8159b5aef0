//! Upper requests: an owned IRP seen through the engine's `UpperRequest`.
//!
//! Owns: reading the current IO_STACK_LOCATION, mapping the MDL to a system address when a
//! path's thread takes the request (W7: HighPagePriority, no-execute), the
//! atomic exchange of the IRP's cancel routine (`IoSetCancelRoutine`, an inline function
//! written out), and completing the IRP exactly once (completing consumes the [`Irp`]).
//! Never: pends, queues or decides what a cancel does (the dispatch code and the engine do).

use core::ffi::c_void;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

use wdk_sys::ntddk::{IofCompleteRequest, MmMapLockedPagesSpecifyCache};
use wdk_sys::{
    _MEMORY_CACHING_TYPE::MmCached, _MM_PAGE_PRIORITY::HighPagePriority, _MODE::KernelMode,
    IO_DISK_INCREMENT, IO_NO_INCREMENT, IO_STACK_LOCATION, IRP, IRP_BUFFERED_IO,
    IRP_MJ_DEVICE_CONTROL, IRP_MJ_FLUSH_BUFFERS, IRP_MJ_READ, IRP_MJ_WRITE, MDL,
    MDL_MAPPED_TO_SYSTEM_VA, MDL_SOURCE_IS_NONPAGED_POOL,
};

use super::nt;
use crate::platform::{
    BufOrigin, IoBuf, LinkedRequests, RequestKind, RequestLinks, RequestList, RequestNote,
    UpperRequest,
};
use crate::Status;

/// MdlMappingNoExecute (wdm.h, Windows 8 and later): map data pages no-execute.
const MDL_MAPPING_NO_EXECUTE: i32 = 0x4000_0000;
/// MdlMappingNoWrite (wdm.h, Windows 8 and later): map the pages read-only. A write request's
/// buffer is only read by this driver (copied into a fragment or bounce buffer before it is
/// encrypted), so its mapping is read-only, as VeraCrypt's MapIrpDataBuffer asks; a stray
/// write through it faults at once instead of changing the caller's data. Like
/// MdlMappingNoExecute, a `#define` the bindings do not carry (wdk-sys 0.5 generates neither),
/// so the value is wdm.h's, checked below against the priority it is or-ed with.
const MDL_MAPPING_NO_WRITE: i32 = 0x8000_0000_u32 as i32;
// The flags are distinct high bits, clear of every MM_PAGE_PRIORITY value (0..=32).
const _: () = assert!(
    MDL_MAPPING_NO_WRITE as u32 == 0x8000_0000
        && MDL_MAPPING_NO_WRITE & MDL_MAPPING_NO_EXECUTE == 0
        && (MDL_MAPPING_NO_WRITE | MDL_MAPPING_NO_EXECUTE) & HighPagePriority == 0
);
/// SL_PENDING_RETURNED (IO_STACK_LOCATION.Control).
const SL_PENDING_RETURNED: u8 = 0x01;

/// An IRP this driver owns and has not completed yet.
///
/// IRQL: the accessors at IRQL <= DISPATCH_LEVEL; `take_buffer` does not map (the buffer's
/// `map` does, IRQL <= DISPATCH_LEVEL); `complete` at IRQL <= DISPATCH_LEVEL.
///
/// # Invariants
/// `irp` is an IRP the I/O manager handed to one of this driver's dispatch routines, owned by
/// this value alone and not completed: valid, with its current stack location set, until
/// `complete` consumes the value.
pub struct Irp {
    irp: NonNull<IRP>,
    /// The caller's buffer is out (in an [`IrpBuf`] and its pieces) until `put_buffer`.
    buffer_out: bool,
    /// What the engine's `arm_cancel` installs as the IRP's cancel routine (none: the IRP is
    /// not cancellable while queued).
    on_cancel: Option<CancelRoutine>,
    /// `arm_cancel` installed `on_cancel` (and no `disarm_cancel` followed yet).
    armed: bool,
    /// The engine's note while the IRP waits in one of its queues.
    note: RequestNote,
    /// Dispatched with the cache manager's or the modified page writer's top-level mark on
    /// the thread: paging I/O a file system sent without IRP_PAGING_IO (FastFAT), served as
    /// paging I/O ([`UpperRequest::is_paging_io`]) whichever thread takes it later.
    paging_mark: bool,
}

/// The engine's queues of waiting IRPs, linked through the IRPs themselves (as VeraCrypt
/// queues IRPs): `Tail.Overlay.ListEntry` holds the links (`Flink` the next IRP, `Blink` the
/// previous one), and what the [`Irp`] wrapper holds (the engine's note, the cancel routine to
/// arm, the buffer, armed and paging-mark flags) waits in `Tail.Overlay.DriverContext`. Queueing allocates
/// nothing and the list is never full (W6).
///
/// Which link and flag is written when is the engine's portable algorithm
/// ([`LinkedRequests`], run by the user-mode tests and loom models too); this glue only gives it
/// access to an IRP's links and flag ([`IrpLinks`]). A keyed list (`new_keyed`: the VERIFYs'
/// line) keeps the in-line flag ([`PARKED_IN_LINE`], DriverContext[3]) on each IRP linked: set
/// by `push_back` and cleared by `pop_front`, `remove_first` and `remove_key`, all under the
/// list's lock; `park` (any other list's push) writes the slot without it, and `from_raw`
/// clears it as the IRP arrives (Windows does not zero DriverContext). `remove_key` then
/// unlinks the IRP its key names through its own Flink and Blink after checking that its
/// neighbours link it (as RemoveEntryList does; a mismatch panics, and the panic handler
/// bugchecks), no search: constant time at DISPATCH_LEVEL however long the line. The links
/// hold IRP addresses (not LIST_ENTRY addresses).
///
/// IRQL: under the engine queue's spin lock (<= DISPATCH_LEVEL).
///
/// # Invariants
/// Every IRP linked is owned by this list alone (its wrapper was consumed by `push_back`) and
/// not completed (the invariants of [`LinkedRequests`] hold over their links); only the driver
/// that owns an IRP uses its `Tail.Overlay` ListEntry and DriverContext, which are not a device
/// queue here (no StartIo). From dispatch on (`from_raw`), an IRP not linked in a keyed list
/// has no in-line flag (its DriverContext[3] is read and written atomically, so a cancel
/// routine's read of it never races another list's `park` as a data race). The engine keeps
/// one keyed list per volume and an IRP is a request of one volume, so the flag names that
/// volume's line.
pub struct IrpList {
    line: LinkedRequests<NonNull<IRP>>,
}

/// The links and in-line flag of IRPs, for [`LinkedRequests`]: `Tail.Overlay.ListEntry`'s
/// Flink and Blink, and [`PARKED_IN_LINE`] in DriverContext[3].
///
/// # Invariants
/// Used only by [`IrpList`], which hands it only IRPs linked in it or being linked into or out
/// of it (parked, owned by the list, not completed), and, for `in_line` and the neighbour check
/// of `remove_key`, the IRP a cancel routine's key names (the contract of `remove_key`: owned
/// by the engine and not completed while the call runs; the neighbours read are linked IRPs of
/// the same list when the check passes, or IRPs whose links were cleared or rewritten by a list
/// that owns them).
struct IrpLinks;

impl RequestLinks for IrpLinks {
    type Node = NonNull<IRP>;

    fn next(&self, irp: NonNull<IRP>) -> Option<NonNull<IRP>> {
        // SAFETY: an IRP of the list (type invariant).
        NonNull::new(unsafe { Irp::parked_next(irp.as_ptr()) })
    }

    fn set_next(&self, irp: NonNull<IRP>, next: Option<NonNull<IRP>>) {
        let next = next.map_or(core::ptr::null_mut(), NonNull::as_ptr);
        // SAFETY: an IRP the list owns (type invariant).
        unsafe { Irp::set_parked_next(irp.as_ptr(), next) }
    }

    fn prev(&self, irp: NonNull<IRP>) -> Option<NonNull<IRP>> {
        // SAFETY: an IRP of the list (type invariant).
        NonNull::new(unsafe { Irp::parked_prev(irp.as_ptr()) })
    }

    fn set_prev(&self, irp: NonNull<IRP>, prev: Option<NonNull<IRP>>) {
        let prev = prev.map_or(core::ptr::null_mut(), NonNull::as_ptr);
        // SAFETY: an IRP the list owns (type invariant).
        unsafe { Irp::set_parked_prev(irp.as_ptr(), prev) }
    }

    fn in_line(&self, irp: NonNull<IRP>) -> bool {
        // SAFETY: an IRP the engine owns, not completed during the call (type invariant). Read
        // atomically: another list may be parking it (a taker that lost the hook).
        let flags = unsafe { Irp::flags_slot(irp.as_ptr()) }.load(Ordering::Relaxed) as usize;
        flags & PARKED_IN_LINE != 0
    }

    fn set_in_line(&self, irp: NonNull<IRP>, on: bool) {
        // SAFETY: an IRP the keyed list links or unlinks, under its lock (type invariant).
        unsafe { Irp::set_in_line(irp.as_ptr(), on) }
    }
}

// SAFETY: the list owns the IRPs linked in it (an owned IRP may be handled from any thread);
// the engine only touches it under its lock.
unsafe impl Send for IrpList {}

/// W9, wine-host build: what `Irp::complete` writes over the driver's part of `Tail.Overlay`
/// (DriverContext and ListEntry) just before IofCompleteRequest, so that a later read of an
/// engine note from a completed IRP (a stale list link, a second completion) is reported
/// instead of passing silently. Not a valid pointer, not a packed note a mount would make.
/// Best effort: Wine's IoCompleteRequest frees the IRP (IoFreeIrp) after the completion
/// routines ran, so the poison is seen only until its heap reuses the block; Driver Verifier's
/// IRP tracking is what proves this on Windows.
#[cfg(feature = "wine-host")]
const POISON: usize = 0xDEAD_0C0D_E1A9_1D00;

/// DriverContext[3] flag: the caller's buffer is out (`Irp::buffer_out`).
const PARKED_BUFFER_OUT: usize = 1;
/// DriverContext[3] flag: the cancel routine was armed (`Irp::armed`).
const PARKED_ARMED: usize = 2;
/// DriverContext[3] flag: the IRP is linked in a keyed [`IrpList`] (the VERIFYs' line): the
/// in-line flag `remove_key` believes. Set and cleared only by a keyed list, under its lock.
const PARKED_IN_LINE: usize = 4;
/// DriverContext[3] flag: dispatched in the cache manager's or page writer's path
/// (`Irp::paging_mark`).
const PARKED_PAGING_MARK: usize = 8;
/// The flags are distinct bits of the slot's low byte, below the note's word.
const _: () = assert!(
    PARKED_BUFFER_OUT | PARKED_ARMED | PARKED_IN_LINE | PARKED_PAGING_MARK == 15
        && PARKED_BUFFER_OUT + PARKED_ARMED + PARKED_IN_LINE + PARKED_PAGING_MARK == 15
);
/// DriverContext[3] upper half: the engine note's fifth word (64-bit targets only).
const _: () = assert!(core::mem::size_of::<usize>() == 8);

impl Irp {
    /// The `Tail.Overlay` of the owned IRP `irp`.
    ///
    /// # Safety
    /// `irp` is an IRP this driver owns and has not completed.
    unsafe fn overlay(irp: *mut IRP) -> *mut wdk_sys::_IRP__bindgen_ty_3__bindgen_ty_1 {
        // SAFETY: the caller's contract; taking a field's address reads nothing. While the
        // driver owns the IRP, the Overlay arm of `Tail` is the one in use.
        unsafe { &raw mut (*irp).Tail.Overlay }
    }

    /// `Tail.Overlay.DriverContext` of the owned IRP `irp`.
    ///
    /// # Safety
    /// As for [`overlay`](Self::overlay).
    unsafe fn driver_context(irp: *mut IRP) -> *mut [*mut c_void; 4] {
        // SAFETY: the caller's contract.
        let overlay = unsafe { Self::overlay(irp) };
        // SAFETY: `overlay` points into the owned IRP; taking a field's address reads nothing.
        unsafe { &raw mut (*overlay).__bindgen_anon_1.__bindgen_anon_1.DriverContext }
    }

    /// `Tail.Overlay.ListEntry.Flink` of the owned IRP `irp` (the list link).
    ///
    /// # Safety
    /// As for [`overlay`](Self::overlay).
    unsafe fn link(irp: *mut IRP) -> *mut *mut wdk_sys::LIST_ENTRY {
        // SAFETY: the caller's contract.
        let overlay = unsafe { Self::overlay(irp) };
        // SAFETY: `overlay` points into the owned IRP; taking a field's address reads nothing.
        unsafe { &raw mut (*overlay).__bindgen_anon_2.ListEntry.Flink }
    }

    /// DriverContext[3] of the owned IRP `irp` as the atomic it is used as (the flags, the
    /// in-line flag among them, and the note's fifth word): a cancel routine's `remove_key`
    /// reads it while another list may be parking the IRP.
    ///
    /// # Safety
    /// `irp` is an IRP this driver owns and has not completed, for as long as the reference is
    /// used.
    unsafe fn flags_slot<'a>(irp: *mut IRP) -> &'a AtomicPtr<c_void> {
        // SAFETY: the caller's contract.
        let context = unsafe { Self::driver_context(irp) };
        // SAFETY: `context` points into the owned IRP; taking an element's address reads
        // nothing.
        let slot = unsafe { &raw mut (*context)[3] };
        // SAFETY: a pointer-sized, pointer-aligned slot of the owned IRP, valid while it is not
        // completed (the caller's contract), accessed only atomically while the IRP is parked
        // (`park`, `unpark`, the keyed list's flag updates; the wine-host poison writes it only
        // at completion, when no list holds it).
        unsafe { AtomicPtr::from_ptr(slot) }
    }

    /// Sets or clears the in-line flag of the parked `irp`.
    ///
    /// # Safety
    /// As for [`flags_slot`](Self::flags_slot); the caller is the keyed list that links (or
    /// unlinks) it, under its lock.
    unsafe fn set_in_line(irp: *mut IRP, on: bool) {
        // SAFETY: the caller's contract.
        let slot = unsafe { Self::flags_slot(irp) };
        let flags = slot.load(Ordering::Relaxed) as usize;
        let flags = if on {
            flags | PARKED_IN_LINE
        } else {
            flags & !PARKED_IN_LINE
        };
        slot.store(flags as *mut c_void, Ordering::Relaxed);
    }

    /// `Tail.Overlay.ListEntry.Blink` of the owned IRP `irp` (a keyed list's back link).
    ///
    /// # Safety
    /// As for [`overlay`](Self::overlay).
    unsafe fn back_link(irp: *mut IRP) -> *mut *mut wdk_sys::LIST_ENTRY {
        // SAFETY: the caller's contract.
        let overlay = unsafe { Self::overlay(irp) };
        // SAFETY: `overlay` points into the owned IRP; taking a field's address reads nothing.
        unsafe { &raw mut (*overlay).__bindgen_anon_2.ListEntry.Blink }
    }

    /// Sets the back link of the parked `irp` (in a keyed list).
    ///
    /// # Safety
    /// `irp` is parked and owned by the calling keyed list.
    unsafe fn set_parked_prev(irp: *mut IRP, prev: *mut IRP) {
        // SAFETY: the caller's contract.
        let link = unsafe { Self::back_link(irp) };
        // SAFETY: the back link of a parked IRP this list owns.
        unsafe { link.write(prev.cast()) };
    }

    /// The IRP linked before the parked `irp` in its keyed list (null: it is the first).
    ///
    /// # Safety
    /// `irp` is linked in a keyed [`IrpList`].
    unsafe fn parked_prev(irp: *mut IRP) -> *mut IRP {
        // SAFETY: the caller's contract.
        let link = unsafe { Self::back_link(irp) };
        // SAFETY: the keyed list's `push_back` or unlinks wrote it.
        unsafe { link.read() }.cast::<IRP>()
    }

    /// Moves the wrapper's state into the IRP and gives up the wrapper (for [`IrpList`]).
    fn park(self) -> NonNull<IRP> {
        let irp = self.irp.as_ptr();
        let [a, b, c, d, e] = self.note.0;
        // The flags' slot is 64 bits wide (x64, ARM64): the flags below (PARKED_*, the low
        // byte), the note's fifth word above.
        let flags = (usize::from(self.buffer_out) * PARKED_BUFFER_OUT)
            | (usize::from(self.armed) * PARKED_ARMED)
            | (usize::from(self.paging_mark) * PARKED_PAGING_MARK)
            | ((u64::from(e) << 32) as usize);
        let routine = self
            .on_cancel
            .map_or(core::ptr::null_mut(), |r| r as *mut c_void);
        // SAFETY: `self` owns the IRP, not completed (type invariant).
        let context = unsafe { Self::driver_context(irp) };
        // SAFETY: the owned IRP's DriverContext is ours to write (see `IrpList`): plain
        // pointer-sized values, the note packed two u32 to a slot (the fifth beside the flags,
        // in slot 3, written below).
        unsafe {
            context.cast::<[*mut c_void; 3]>().write([
                (u64::from(a) | (u64::from(b) << 32)) as usize as *mut c_void,
                (u64::from(c) | (u64::from(d) << 32)) as usize as *mut c_void,
                routine,
            ])
        };
        // SAFETY: as above. Stored atomically, without the in-line flag: a keyed list sets it
        // after this, and a cancel routine may read the slot meanwhile (`IrpList::remove_key`).
        unsafe { Self::flags_slot(irp) }.store(flags as *mut c_void, Ordering::Relaxed);
        // SAFETY: as above.
        let link = unsafe { Self::link(irp) };
        // SAFETY: the link field is ours while the IRP is owned.
        unsafe { link.write(core::ptr::null_mut()) };
        self.irp
    }

    /// The wrapper of an IRP [`park`](Self::park) gave up.
    ///
    /// # Safety
    /// `irp` came from `park` and no other wrapper of it exists (or the one made here is only
    /// read, like `IrpList::remove_first`'s view, and dropped while the IRP stays parked).
    unsafe fn unpark(irp: NonNull<IRP>) -> Irp {
        // SAFETY: the caller's contract: a parked, owned, not completed IRP.
        let context = unsafe { Self::driver_context(irp.as_ptr()) };
        // SAFETY: `park` wrote slots 0 to 2 of the owned IRP's DriverContext.
        let [n01, n23, routine] = unsafe { context.cast::<[*mut c_void; 3]>().read() };
        // SAFETY: as above; `park` stored slot 3 (the flags), read as it is written.
        let flags = unsafe { Self::flags_slot(irp.as_ptr()) }.load(Ordering::Relaxed);
        // W9 (wine-host build): a parked IRP whose context is the completion poison was
        // completed and is still linked (or its memory reused): reported, then handled as it
        // reads (on Windows this read would be a use after free).
        #[cfg(feature = "wine-host")]
        Self::check_not_completed([n01, n23, routine, flags]);
        let (n01, n23, flags) = (n01 as usize as u64, n23 as usize as u64, flags as usize);
        let on_cancel = NonNull::new(routine).map(|r| {
            // SAFETY: `park` stored a `CancelRoutine` (or null, handled by `NonNull::new`).
            unsafe { core::mem::transmute::<*mut c_void, CancelRoutine>(r.as_ptr()) }
        });
        Irp {
            irp,
            buffer_out: flags & PARKED_BUFFER_OUT != 0,
            on_cancel,
            armed: flags & PARKED_ARMED != 0,
            paging_mark: flags & PARKED_PAGING_MARK != 0,
            note: RequestNote([
                n01 as u32,
                (n01 >> 32) as u32,
                n23 as u32,
                (n23 >> 32) as u32,
                (flags as u64 >> 32) as u32,
            ]),
        }
    }

    /// The next IRP linked after the parked `irp`.
    ///
    /// # Safety
    /// `irp` is linked in an [`IrpList`].
    unsafe fn parked_next(irp: *mut IRP) -> *mut IRP {
        // SAFETY: the caller's contract.
        let link = unsafe { Self::link(irp) };
        // SAFETY: `park` or `IrpList` wrote the link of the parked IRP.
        let next = unsafe { link.read() }.cast::<IRP>();
        // W9 (wine-host build): a completion-poisoned link (the IRP was completed while still
        // linked; `unpark` reports its note) is not followed, which would crash winedevice and
        // lose the unload summary: reported, and the list ends here.
        #[cfg(feature = "wine-host")]
        if next as usize == POISON {
            Self::report_poisoned_link();
            return core::ptr::null_mut();
        }
        next
    }

    /// W9, wine-host build: [`parked_next`](Self::parked_next) found a poisoned link. Cold and
    /// out of line: the list walks that inline `parked_next` stay small.
    #[cfg(feature = "wine-host")]
    #[cold]
    #[inline(never)]
    fn report_poisoned_link() {
        super::irql::report_lifecycle(
            "IRP list link read after completion (the list is cut there)",
        );
    }

    /// Sets the link of the parked `irp`.
    ///
    /// # Safety
    /// `irp` is parked and owned by the calling list.
    unsafe fn set_parked_next(irp: *mut IRP, next: *mut IRP) {
        // SAFETY: the caller's contract.
        let link = unsafe { Self::link(irp) };
        // SAFETY: the link of a parked IRP this list owns.
        unsafe { link.write(next.cast()) };
    }
}

impl RequestList<Irp> for IrpList {
    fn new() -> Self {
        IrpList {
            line: LinkedRequests::new(false),
        }
    }

    fn new_keyed() -> Self {
        IrpList {
            line: LinkedRequests::new(true),
        }
    }

    fn push_back(&mut self, request: Irp) {
        // Parked: owned by this list from here on.
        self.line.push_back(&IrpLinks, request.park());
    }

    fn push_front(&mut self, request: Irp) {
        // Parked: owned by this list from here on.
        self.line.push_front(&IrpLinks, request.park());
    }

    fn pop_front(&mut self) -> Option<Irp> {
        let irp = self.line.pop_front(&IrpLinks)?;
        // SAFETY: unlinked just now: this list gives up its ownership to the one wrapper.
        Some(unsafe { Irp::unpark(irp) })
    }

    // Always inlined, as `remove_first`: the caller's `pick` is then called directly.
    #[inline(always)]
    fn pop_front_if(&mut self, pick: &mut dyn FnMut(&Irp) -> bool) -> Option<Irp> {
        let head = self.line.head()?;
        // SAFETY: `head` is linked in this list; the view is only read and dropped while the
        // IRP stays parked (Irp has no Drop).
        if !pick(&unsafe { Irp::unpark(head) }) {
            return None;
        }
        self.pop_front()
    }

    // Always inlined: the cancel routine's call (inside the queue's spin lock) then calls its
    // `pick` closure directly. Out of line, the `dyn FnMut` call is an indirect call that the
    // image's stack-budget check (scripts/check-sys-image.py) must take as any closure of the
    // image, and the cancel path goes over its budget (seen in the wine-host image).
    #[inline(always)]
    fn remove_first(&mut self, pick: &mut dyn FnMut(&Irp) -> bool) -> Option<Irp> {
        let irp = self.line.remove_first(&IrpLinks, |irp| {
            // SAFETY: `irp` is linked in this list; the view is only read and dropped while
            // the IRP stays parked (Irp has no Drop).
            pick(&unsafe { Irp::unpark(irp) })
        })?;
        // SAFETY: unlinked just now: this list gives up its ownership to the one wrapper.
        Some(unsafe { Irp::unpark(irp) })
    }

    /// Constant time: no loop. The IRP `key` names is read only for its in-line flag unless
    /// the flag is set, and then unlinked through its own Flink and Blink once its neighbours
    /// are checked to link it.
    fn remove_key(&mut self, key: usize) -> Option<Irp> {
        // The contract of `remove_key`: `key` is the address of an IRP the engine owns and does
        // not complete while this runs (the cancel routine's, `cancel_queued`: the engine
        // completes it only after the routine's search ended): `IrpLinks`' invariant.
        let irp = self
            .line
            .remove_key(&IrpLinks, NonNull::new(key as *mut IRP)?)?;
        // SAFETY: unlinked just now: this list gives up its ownership to the one wrapper.
        Some(unsafe { Irp::unpark(irp) })
    }

    fn len(&self) -> usize {
        self.line.len()
    }
}

/// A DRIVER_CANCEL routine.
pub type CancelRoutine = unsafe extern "C" fn(*mut wdk_sys::DEVICE_OBJECT, *mut IRP);

/// The caller's buffer of an [`Irp`]: a piece of the bytes its MDL describes.
///
/// Taken at dispatch unmapped (docs/review.md W7): `address` is the MDL's virtual address
/// (StartVa + ByteOffset, MmGetMdlVirtualAddress), which the path is chosen from; the path's
/// thread that takes the request calls `map` (MmGetSystemAddressForMdlSafe with
/// HighPagePriority | MdlMappingNoExecute, and MdlMappingNoWrite for a write request's buffer)
/// on the whole buffer before it splits it. It stays
/// valid while its IRP is not completed: the pages are locked by the I/O manager (direct I/O)
/// and a system mapping lasts until completion (MmUnlockPages unmaps it), and the engine gives
/// every piece back (`put_buffer`) before it completes the request (platform contract of
/// `IoBuf`).
///
/// # Invariants
/// `mdl` is the MDL of one owned, not completed IRP, describing at least `offset + len` bytes;
/// `mapped`, when set, is the system address of byte `offset` of that MDL's buffer; no other
/// live piece overlaps `offset..offset + len`.
pub struct IrpBuf {
    mdl: NonNull<MDL>,
    offset: usize,
    len: usize,
    mapped: Option<NonNull<u8>>,
    /// The buffer of a write request: mapped read-only (MdlMappingNoWrite).
    read_only: bool,
}

// SAFETY: a piece is a disjoint range of locked memory of an owned IRP; whoever owns the piece
// is the only one touching those bytes, from any thread.
unsafe impl Send for IrpBuf {}

impl IrpBuf {
    /// MmGetSystemAddressForMdlSafe (an inline function, written out), with HighPagePriority
    /// (the paging path must not fail where a normal request may), no-execute, and no-write
    /// for a write request's buffer.
    ///
    /// IRQL: <= DISPATCH_LEVEL (called from the paths' system threads, at PASSIVE_LEVEL).
    fn system_address(&self) -> Option<NonNull<u8>> {
        // SAFETY: `mdl` is the MDL of an owned IRP, valid until completion (type invariant);
        // only the I/O manager and this driver write its flags, and this driver maps it from
        // one thread (the engine maps the whole buffer once, before splitting it).
        let (flags, mapped) = unsafe {
            let m = self.mdl.as_ref();
            (m.MdlFlags as u32, m.MappedSystemVa)
        };
        let base = if flags & (MDL_MAPPED_TO_SYSTEM_VA | MDL_SOURCE_IS_NONPAGED_POOL) != 0 {
            mapped
        } else {
            // SAFETY: the MDL describes pages the I/O manager locked for this IRP (direct I/O);
            // a kernel-mode mapping with BugCheckOnFailure = 0 returns NULL when system PTEs
            // run out, handled below. The mapping is released by MmUnlockPages when the IRP
            // completes.
            unsafe {
                MmMapLockedPagesSpecifyCache(
                    self.mdl.as_ptr(),
                    KernelMode as i8,
                    MmCached,
                    core::ptr::null_mut(),
                    0,
                    HighPagePriority
                        | MDL_MAPPING_NO_EXECUTE
                        | if self.read_only {
                            MDL_MAPPING_NO_WRITE
                        } else {
                            0
                        },
                )
            }
        };
        NonNull::new(base.cast::<u8>())
    }
}

impl IoBuf for IrpBuf {
    #[cfg_attr(feature = "wine-host", track_caller)]
    fn map(&mut self) -> Result<&mut [u8], Status> {
        if self.mapped.is_none() {
            // W9 (wine-host build): mapped by the path's thread at PASSIVE_LEVEL (W7), never
            // in dispatch (which runs at DISPATCH_LEVEL there).
            super::irql::check(crate::platform::irql::Call::MapMdl);
            let base = self.system_address().ok_or(Status::InsufficientResources)?;
            // SAFETY: `offset + len` lies inside the MDL's buffer (type invariant), so the
            // address stays inside the mapping.
            let start = unsafe { base.as_ptr().add(self.offset) };
            self.mapped = NonNull::new(start);
        }
        Ok(self.bytes())
    }
    fn bytes(&mut self) -> &mut [u8] {
        let Some(start) = self.mapped else {
            // An engine bug (it maps before it touches a byte): said on the debugger, and the
            // empty slice makes the engine's `IoBuf::mapped` fail the request with
            // STATUS_INSUFFICIENT_RESOURCES; nothing is read or written.
            // SAFETY: a NUL-terminated format without conversions; IRQL <= DIRQL.
            unsafe {
                wdk_sys::ntddk::DbgPrint(
                    c"vcdirect: an unmapped caller buffer was touched (W7); request failed\n"
                        .as_ptr(),
                )
            };
            return &mut [];
        };
        // SAFETY: `start..start+len` lies inside the system mapping of the IRP's MDL (type
        // invariant) and no other piece overlaps it; the borrow of `self` keeps the piece from
        // being split meanwhile.
        unsafe { core::slice::from_raw_parts_mut(start.as_ptr(), self.len) }
    }
    fn len(&self) -> usize {
        self.len
    }
    fn split_to(&mut self, at: usize) -> Self {
        let at = at.min(self.len);
        let head = IrpBuf {
            mdl: self.mdl,
            offset: self.offset,
            len: at,
            mapped: self.mapped,
            read_only: self.read_only,
        };
        self.offset += at;
        self.len -= at;
        self.mapped = self.mapped.map(|start| {
            // SAFETY: `at <= len`, so the new start stays inside (or one past) the mapping.
            let rest = unsafe { start.as_ptr().add(at) };
            // Derived from a non-null pointer inside one mapping, so non-null.
            NonNull::new(rest).unwrap_or(start)
        });
        head
    }
    fn unsplit(&mut self, next: Self) {
        // Pieces come back in order and adjacent (trait contract); anything else is dropped
        // rather than joined, so the buffer can only shrink, never cover foreign memory.
        let same = self.mdl == next.mdl && self.mapped.is_some() == next.mapped.is_some();
        if same && self.offset + self.len == next.offset {
            self.len += next.len;
        } else if self.len == 0 {
            *self = next;
        }
    }
    fn address(&self) -> usize {
        // MmGetMdlVirtualAddress: the caller's virtual address of the MDL's first byte.
        // SAFETY: as in `system_address`: the MDL of an owned IRP.
        let (start, byte_offset) = unsafe {
            let m = self.mdl.as_ref();
            (m.StartVa as usize, m.ByteOffset as usize)
        };
        start.wrapping_add(byte_offset).wrapping_add(self.offset)
    }
    fn origin(&self) -> Option<BufOrigin> {
        Some(BufOrigin {
            descriptor: self.mdl.as_ptr() as usize,
            offset: self.offset,
        })
    }
}

// SAFETY: an IRP that is owned (not completed) may be handled and completed from any thread;
// the I/O manager does not touch it until IofCompleteRequest.
unsafe impl Send for Irp {}

impl Irp {
    /// Takes ownership of `irp`.
    ///
    /// # Safety
    /// `irp` is an IRP the I/O manager handed to this driver's dispatch routine, not yet
    /// completed, and no other `Irp` wraps it.
    pub unsafe fn from_raw(irp: NonNull<IRP>) -> Self {
        // SAFETY: the caller's contract: an IRP handed to this driver's dispatch routine, owned
        // and not completed. Windows does not zero `Tail.Overlay.DriverContext` for a driver: the
        // in-line flag is cleared here, atomically as the slot is always accessed, so from
        // dispatch on an IRP not linked in a keyed list has none (`IrpList::remove_key`
        // believes it). Nothing of ours is in the slot yet: the whole slot is cleared.
        unsafe { Self::flags_slot(irp.as_ptr()) }.store(core::ptr::null_mut(), Ordering::Relaxed);
        // The product's: the dispatching thread's top-level IRP, read only below
        // DISPATCH_LEVEL (above it, from a DPC, the current thread is whichever one was
        // interrupted: no mark). The Wine build lends no context: no mark.
        #[cfg(not(feature = "wine-host"))]
        let top_level = if super::pool::below_dispatch() {
            // SAFETY: IRQL <= DISPATCH_LEVEL (IoGetTopLevelIrp's contract; below it here);
            // reads the current thread's field.
            unsafe { wdk_sys::ntddk::IoGetTopLevelIrp() as usize }
        } else {
            0
        };
        #[cfg(feature = "wine-host")]
        let top_level = 0usize;
        Irp {
            irp,
            buffer_out: false,
            on_cancel: None,
            armed: false,
            note: RequestNote([0; 5]),
            paging_mark: top_level == wdk_sys::FSRTL_CACHE_TOP_LEVEL_IRP as usize
                || top_level == wdk_sys::FSRTL_MOD_WRITE_TOP_LEVEL_IRP as usize,
        }
    }

    /// W9, wine-host build: writes [`POISON`] over the driver's part of `Tail.Overlay`
    /// (DriverContext, ListEntry) just before completion; finding it already there means the
    /// IRP is completed a second time (a fresh IRP never carries it: Wine's IoInitializeIrp,
    /// like Windows', zeroes the whole IRP).
    #[cfg(feature = "wine-host")]
    #[track_caller]
    fn poison(&self) {
        let irp = self.irp.as_ptr();
        // SAFETY: `self` owns the IRP, not completed yet (type invariant).
        let context = unsafe { Self::driver_context(irp) };
        // SAFETY: the owned IRP's DriverContext is ours until completion (see `IrpList`).
        let before = unsafe { context.read() };
        if before.iter().all(|p| *p as usize == POISON) {
            super::irql::report_lifecycle("IRP completed twice (its context already poisoned)");
        }
        // SAFETY: as above; plain pointer-sized values, no pointer is formed from them.
        unsafe { context.write([POISON as *mut c_void; 4]) };
        // SAFETY: as above.
        let overlay = unsafe { Self::overlay(irp) };
        // SAFETY: `overlay` points into the owned IRP; taking a field's address reads nothing.
        let entry = unsafe { &raw mut (*overlay).__bindgen_anon_2.ListEntry };
        let poisoned = wdk_sys::LIST_ENTRY {
            Flink: POISON as *mut wdk_sys::LIST_ENTRY,
            Blink: POISON as *mut wdk_sys::LIST_ENTRY,
        };
        // SAFETY: `Tail.Overlay.ListEntry` of the owned IRP is the driver's until completion
        // (`IrpList` links through it; neither Wine's IoCompleteRequest, which runs the
        // completion routines and frees the IRP, nor Windows' reads it: the I/O manager uses
        // `Tail` for its own purposes only after completion).
        unsafe { entry.write(poisoned) };
    }

    /// W9, wine-host build: reports an engine note read from an IRP's DriverContext after
    /// completion (the context is [`POISON`]), with the reader's site.
    #[cfg(feature = "wine-host")]
    #[track_caller]
    fn check_not_completed(context: [*mut c_void; 4]) {
        if context.iter().all(|p| *p as usize == POISON) {
            super::irql::report_lifecycle("IRP touched after completion (its engine note read)");
        }
    }

    /// The cancel routine `arm_cancel` will install while the engine queues the IRP.
    pub fn set_cancel_routine(&mut self, routine: CancelRoutine) {
        self.on_cancel = Some(routine);
    }

    /// The IRP's CancelRoutine field as the atomic it is (IoCancelIrp exchanges it
    /// concurrently, under the cancel spin lock, which does not order our exchanges).
    fn cancel_routine_slot(&self) -> &AtomicPtr<c_void> {
        // SAFETY: the IRP is owned and not completed (type invariant); taking a field's
        // address reads and writes nothing.
        let field = unsafe { &raw mut (*self.irp.as_ptr()).CancelRoutine };
        // SAFETY: the field lives as long as `self`; it is a pointer-sized, pointer-aligned
        // function pointer (an Option<fn> has the pointer's layout) that the I/O manager and
        // this driver only access atomically (IoSetCancelRoutine is InterlockedExchangePointer).
        unsafe { AtomicPtr::from_ptr(field.cast::<*mut c_void>()) }
    }

    /// IoSetCancelRoutine: installs `routine` (or none); returns whether one was installed.
    fn exchange_cancel_routine(&self, routine: Option<CancelRoutine>) -> bool {
        let new = routine.map_or(core::ptr::null_mut(), |r| r as *mut c_void);
        !self
            .cancel_routine_slot()
            .swap(new, Ordering::SeqCst)
            .is_null()
    }

    /// IoMarkIrpPending (an inline function): the dispatch routine returns STATUS_PENDING.
    pub fn mark_pending(&mut self) {
        // SAFETY: as in `stack`: the current stack location of an owned IRP; setting
        // SL_PENDING_RETURNED in its Control byte is what IoMarkIrpPending does.
        let current = unsafe { self.raw().Tail.Overlay.__bindgen_anon_2.__bindgen_anon_1 };
        // SAFETY: in dispatch the CurrentStackLocation arm of this union is the one in use.
        let location = unsafe { current.CurrentStackLocation };
        // SAFETY: the current stack location of an owned IRP is valid and ours to write.
        unsafe { (*location).Control |= SL_PENDING_RETURNED };
    }

    /// IRP_MJ_DEVICE_CONTROL parameters: (IoControlCode, InputBufferLength, OutputBufferLength).
    pub fn ioctl_parameters(&self) -> (u32, u32, u32) {
        // SAFETY: read only for IRP_MJ_DEVICE_CONTROL/INTERNAL, whose DeviceIoControl arm is
        // the one the I/O manager filled in; all other majors get zeros.
        let p = unsafe { self.stack().Parameters.DeviceIoControl };
        match u32::from(self.major_function()) {
            wdk_sys::IRP_MJ_DEVICE_CONTROL => {
                (p.IoControlCode, p.InputBufferLength, p.OutputBufferLength)
            }
            _ => (0, 0, 0),
        }
    }

    /// The METHOD_BUFFERED system buffer of a device control: `max(input, output)` bytes
    /// (input first, reply written over it), or `None` when there is none this code may trust
    /// with that length: not METHOD_BUFFERED, no SystemBuffer, or (product build) IRP_BUFFERED_IO
    /// not set in Irp->Flags. The I/O manager (NtDeviceIoControlFile) and
    /// IoBuildDeviceIoControlRequest set IRP_BUFFERED_IO exactly when they allocated that
    /// buffer; a filter that builds the IRP by hand and points SystemBuffer at a buffer of its
    /// own, without the flag, gets the answer to a request without buffer (the portable answer
    /// handles a buffer shorter than the lengths claim: BUFFER_TOO_SMALL or an answer without
    /// bytes, nothing written). The wine-host build trusts SystemBuffer without the flag:
    /// Wine's I/O manager allocates max(input, output) for METHOD_BUFFERED (dispatch_ioctl)
    /// but never sets IRP_BUFFERED_IO.
    pub fn system_buffer(&mut self) -> Option<&mut [u8]> {
        let (buffer, len) = self.system_buffer_parts()?;
        // SAFETY: `system_buffer_parts`: `len` bytes of nonpaged memory at `buffer`, valid
        // until completion; the IRP is owned until completion and the borrow of `self` (mut)
        // bounds the slice, so nothing else touches those bytes meanwhile.
        Some(unsafe { core::slice::from_raw_parts_mut(buffer.as_ptr(), len) })
    }

    /// Where the METHOD_BUFFERED system buffer is and its length (see
    /// [`system_buffer`](Self::system_buffer) for when there is none).
    fn system_buffer_parts(&self) -> Option<(NonNull<u8>, usize)> {
        let (code, input, output) = self.ioctl_parameters();
        if code & 3 != 0 {
            return None; // not METHOD_BUFFERED
        }
        if cfg!(not(feature = "wine-host")) && self.raw().Flags & IRP_BUFFERED_IO == 0 {
            return None; // not a buffer the I/O manager's contract sizes
        }
        let len = input.max(output) as usize;
        // SAFETY: for a METHOD_BUFFERED device control the AssociatedIrp arm holds the
        // SystemBuffer (a pointer, read by copy). IRP_BUFFERED_IO is set (checked above;
        // wine-host: Wine's I/O manager, the only sender there, allocates the same way without
        // the flag), so whoever built the IRP allocated max(input, output) bytes of nonpaged
        // memory at SystemBuffer for it and frees it only after completion.
        let buffer = unsafe { self.raw().AssociatedIrp.SystemBuffer };
        Some((NonNull::new(buffer.cast::<u8>())?, len))
    }

    /// IOCTL_DISK_VERIFY's (StartingOffset, Length), read from its system buffer
    /// (`disk_ioctl::verify_range`), or its status when the input is not a whole
    /// VERIFY_INFORMATION (STATUS_BUFFER_TOO_SMALL). The engine reads it once, as it validates
    /// the request (`offset`, `length`), and carries the validated range with the queued IRP
    /// (its note) instead of reading the buffer again. IRQL: any.
    pub fn verify_range(&self) -> Result<(i64, u32), Status> {
        let (_, input_len, _) = self.ioctl_parameters();
        let Some((buffer, len)) = self.system_buffer_parts() else {
            return crate::disk_ioctl::verify_range(&[], 0);
        };
        // SAFETY: `system_buffer_parts`: `len` bytes at `buffer`, valid until completion; only
        // read here, while `self` is borrowed (no `system_buffer` borrow can be alive), and
        // nobody writes a VERIFY's buffer.
        let bytes = unsafe { core::slice::from_raw_parts(buffer.as_ptr(), len) };
        crate::disk_ioctl::verify_range(bytes, input_len as usize)
    }

    fn raw(&self) -> &IRP {
        // SAFETY: the IRP is owned and not completed (type invariant), so it is valid for as
        // long as `self`, and the I/O manager does not write it while we own it.
        unsafe { self.irp.as_ref() }
    }

    fn stack(&self) -> &IO_STACK_LOCATION {
        // SAFETY: for an IRP in dispatch, the Overlay arm of the Tail union is the one in use
        // (IoGetCurrentIrpStackLocation reads the same field).
        let current = unsafe { self.raw().Tail.Overlay.__bindgen_anon_2.__bindgen_anon_1 };
        // SAFETY: in dispatch the CurrentStackLocation arm of this union is the one in use.
        let location = unsafe { current.CurrentStackLocation };
        // SAFETY: the current stack location of an owned IRP (set by the I/O manager before
        // dispatch) is valid for as long as the IRP.
        unsafe { &*location }
    }

    /// The major function code (IRP_MJ_*).
    pub fn major_function(&self) -> u8 {
        self.stack().MajorFunction
    }

    /// IRP_MJ_PNP IRP_MN_DEVICE_USAGE_NOTIFICATION parameters: (the minor code, and for that
    /// minor code (DEVICE_USAGE_NOTIFICATION_TYPE, InPath)); `None` for any other major.
    pub fn pnp_parameters(&self) -> Option<(u8, Option<(u32, bool)>)> {
        if u32::from(self.major_function()) != wdk_sys::IRP_MJ_PNP {
            return None;
        }
        let minor = self.stack().MinorFunction;
        if u32::from(minor) != wdk_sys::IRP_MN_DEVICE_USAGE_NOTIFICATION {
            return Some((minor, None));
        }
        // SAFETY: for IRP_MN_DEVICE_USAGE_NOTIFICATION the UsageNotification arm of Parameters
        // is the one its sender filled in (plain integers, read by copy).
        let p = unsafe { self.stack().Parameters.UsageNotification };
        Some((minor, Some((p.Type as u32, p.InPath != 0))))
    }

    /// The IRP's IoStatus.Status as it is now: for an IRP_MJ_PNP request in dispatch, the
    /// status its sender set before sending (STATUS_NOT_SUPPORTED, by the PnP rules).
    pub fn current_status(&self) -> Status {
        // SAFETY: the Status arm of the IoStatus union is the one senders and the I/O manager
        // write (its Pointer arm is reserved); a plain integer, read by copy from an owned IRP.
        let raw = unsafe { self.raw().IoStatus.__bindgen_anon_1.Status };
        Status::from_ntstatus(raw as u32)
    }

    /// The IRP's MDL and the bytes it describes, or `None` without an MDL.
    fn mdl(&self) -> Option<(NonNull<MDL>, u32)> {
        // SAFETY: owned IRP; MdlAddress is NULL or an MDL describing the caller's buffer.
        let mdl = NonNull::new(unsafe { self.irp.as_ref().MdlAddress })?;
        // SAFETY: `mdl` is the IRP's MDL, valid until completion.
        let count = unsafe { mdl.as_ref().ByteCount };
        Some((mdl, count))
    }
}

impl UpperRequest for Irp {
    type Buf = IrpBuf;
    type List = IrpList;

    fn note(&self) -> RequestNote {
        self.note
    }

    fn set_note(&mut self, note: RequestNote) {
        self.note = note;
    }

    fn kind(&self) -> RequestKind {
        match u32::from(self.major_function()) {
            IRP_MJ_READ => RequestKind::Read,
            IRP_MJ_WRITE => RequestKind::Write,
            IRP_MJ_FLUSH_BUFFERS => RequestKind::Flush,
            IRP_MJ_DEVICE_CONTROL
                if self.ioctl_parameters().0 == crate::disk_ioctl::code::DISK_VERIFY =>
            {
                RequestKind::Verify
            }
            _ => RequestKind::Other(self.major_function()),
        }
    }

    fn offset(&self) -> i64 {
        match self.kind() {
            RequestKind::Read | RequestKind::Write => {
                // SAFETY: for IRP_MJ_READ/WRITE the Read/Write arm of the parameter union is
                // the one the I/O manager filled in (same layout for both).
                let read = unsafe { self.stack().Parameters.Read };
                // SAFETY: LARGE_INTEGER's QuadPart arm spans the whole union.
                unsafe { read.ByteOffset.QuadPart }
            }
            // The glue hands the engine only a VERIFY whose input is whole; were it not, a
            // negative offset makes the engine refuse it (STATUS_INVALID_PARAMETER).
            RequestKind::Verify => self.verify_range().map_or(-1, |(offset, _)| offset),
            _ => 0,
        }
    }

    fn length(&self) -> u32 {
        match self.kind() {
            // SAFETY: as in `offset`.
            RequestKind::Read | RequestKind::Write => unsafe {
                self.stack().Parameters.Read.Length
            },
            RequestKind::Verify => self.verify_range().map_or(0, |(_, length)| length),
            _ => 0,
        }
    }

    fn take_buffer(&mut self) -> Option<IrpBuf> {
        if self.buffer_out {
            return None;
        }
        let length = self.length();
        // docs/review.md R14: no MDL means no buffer, never a crash. W7: not mapped here; the
        // path's thread maps it when it takes the request.
        let (mdl, mdl_bytes) = self.mdl()?;
        if mdl_bytes < length {
            return None;
        }
        self.buffer_out = true;
        Some(IrpBuf {
            mdl,
            offset: 0,
            len: length as usize,
            mapped: None,
            read_only: self.kind() == RequestKind::Write,
        })
    }

    fn put_buffer(&mut self, _buf: IrpBuf) {
        // The bytes live in the IRP's MDL; the handle only marks them as ours again.
        self.buffer_out = false;
    }

    fn is_cancelled(&self) -> bool {
        // SAFETY: the IRP is owned and not completed (type invariant); taking a field's
        // address reads and writes nothing.
        let field = unsafe { &raw mut (*self.irp.as_ptr()).Cancel };
        // SAFETY: `Cancel` is a byte of the owned IRP (valid for as long as `self`) that
        // IoCancelIrp may set concurrently: read it as the atomic byte it is used as.
        let cancel = unsafe { AtomicU8::from_ptr(field) };
        cancel.load(Ordering::SeqCst) != 0
    }

    /// Product: the upper IRP's hint (IoReuseIrp resets a child's, so the host sets it again).
    /// wine-host: none (Wine 8.0 exports neither IoGetIoPriorityHint nor IoSetIoPriorityHint).
    fn priority_hint(&self) -> Option<u8> {
        #[cfg(not(feature = "wine-host"))]
        {
            // SAFETY: the IRP is owned by this request and not completed; the routine only
            // reads it (IRQL <= DISPATCH_LEVEL).
            let hint = unsafe { wdk_sys::ntddk::IoGetIoPriorityHint(self.irp.as_ptr()) };
            u8::try_from(hint).ok()
        }
        #[cfg(feature = "wine-host")]
        None
    }

    /// Dispatched under the cache manager's or page writer's top-level mark, or IRP_PAGING_IO
    /// on the IRP, or on its master when it is an associated IRP (a file system
    /// splits a paging request into associated IRPs, which IoMakeAssociatedIrp gives only
    /// IRP_ASSOCIATED_IRP).
    fn is_paging_io(&self) -> bool {
        if self.paging_mark {
            return true;
        }
        // SAFETY: the IRP is owned by this request and not completed; Flags is only read.
        let flags = unsafe { (*self.irp.as_ptr()).Flags };
        if flags & wdk_sys::IRP_PAGING_IO != 0 {
            return true;
        }
        if flags & wdk_sys::IRP_ASSOCIATED_IRP == 0 {
            return false;
        }
        // SAFETY: the IRP is owned by this request and not completed (read only).
        let associated = unsafe { &(*self.irp.as_ptr()).AssociatedIrp };
        // SAFETY: an associated IRP's MasterIrp arm is the one in use, and the master stays
        // allocated until every associated IRP completed (this one is not yet).
        let master = unsafe { associated.MasterIrp };
        // SAFETY: as above; only its Flags are read.
        !master.is_null() && unsafe { (*master).Flags } & wdk_sys::IRP_PAGING_IO != 0
    }

    fn cancel_key(&self) -> usize {
        self.irp.as_ptr() as usize
    }

    fn arm_cancel(&mut self) -> bool {
        let Some(routine) = self.on_cancel else {
            return true;
        };
        self.exchange_cancel_routine(Some(routine));
        self.armed = true;
        // Cancelled before the routine was in place (IoCancelIrp saw none): take it back. If
        // IoCancelIrp took it first, the routine runs and settles the request with the engine.
        if self.is_cancelled() && self.exchange_cancel_routine(None) {
            self.armed = false;
            return false;
        }
        true
    }

    fn disarm_cancel(&mut self) -> bool {
        if !core::mem::replace(&mut self.armed, false) {
            return true;
        }
        self.exchange_cancel_routine(None)
    }

    #[cfg_attr(feature = "wine-host", track_caller)]
    fn complete(self, status: Status, information: usize) {
        #[cfg(not(feature = "wine-host"))]
        debug_assert!(
            self.cancel_routine_slot().load(Ordering::SeqCst).is_null(),
            "an IRP is completed with its cancel routine still set"
        );
        // W9, wine-host build: the same rule reported and counted (the e2e fails on it), then
        // the completion proceeds; and IoCompleteRequest's level (<= DISPATCH_LEVEL).
        #[cfg(feature = "wine-host")]
        {
            // The fault switch VcdirectWineFaultIrpLifecycle (w9-switch-irp-lifecycle-caught):
            // every read is completed the wrong way, as if its cancel routine were still set,
            // and its note read back after the poison; both must be reported. "Still set" is
            // a synthetic flag, not the real CancelRoutine slot: installing the routine again
            // would race a Wine IoCancelIrp, whose routine would then run for a request the
            // engine already settled.
            let fault = super::irql::Fault::IrpLifecycle.is_on()
                && self.kind() == RequestKind::Read
                && self.on_cancel.is_some();
            if fault || !self.cancel_routine_slot().load(Ordering::SeqCst).is_null() {
                super::irql::report_lifecycle("IRP completed with its cancel routine set");
            }
            super::irql::check(crate::platform::irql::Call::CompleteRequest);
            self.poison();
            if fault {
                // SAFETY: `self` owns the IRP, not completed yet (type invariant).
                let context = unsafe { Self::driver_context(self.irp.as_ptr()) };
                // SAFETY: the owned IRP's DriverContext, just written by `poison`.
                Self::check_not_completed(unsafe { context.read() });
            }
        }
        // W11: a disk's boost for a transfer that succeeded, as disk class drivers and
        // VeraCrypt complete theirs; none for anything else.
        let transfer = matches!(
            self.kind(),
            RequestKind::Read | RequestKind::Write | RequestKind::Flush
        );
        let boost = if transfer && status.is_success() {
            IO_DISK_INCREMENT
        } else {
            IO_NO_INCREMENT
        };
        let irp = self.irp.as_ptr();
        // SAFETY: owned, not yet completed IRP: we may write its status block.
        let io_status = unsafe { &mut (*irp).IoStatus };
        io_status.__bindgen_anon_1.Status = nt(status);
        io_status.Information = information as u64;
        // SAFETY: owned, not yet completed IRP; it is never touched again because `self` is
        // consumed here.
        unsafe { IofCompleteRequest(irp, boost as i8) };
    }
}
