//! Child requests: the IRPs the volume sends to its host device, one per segment, each in one
//! of the volume's child-operation slots.
//!
//! Owns: [`ChildSlots`] (docs/review.md W6: [`SLOTS`] slots allocated at mount, each an IRP
//! sized for the host's stack, an MDL able to describe the largest segment and the KEVENT its
//! completion routine sets; reused for every segment with IoReuseIrp, so a segment allocates
//! nothing), building one child request in a slot (W11: READ, WRITE or FLUSH_BUFFERS with
//! IRP_NOCACHE and never the upper request's paging flags, the issuing thread in
//! Tail.Overlay.Thread and the upper request's I/O priority hint, at least normal (product),
//! the mount's FILE_OBJECT in the target's stack location, the data described by a partial MDL of the upper request's MDL for
//! a read into the caller's buffer, or by an MDL built for the engine's nonpaged buffer), and
//! [`ChildIo`], the engine's `HostIo`, which holds the host's remove lock and its slot until the
//! IRP completed (R13). Never: retries, times out or abandons a request (R13: a started child
//! is always waited for).
//!
//! A worker takes one slot per segment it issues and gives it back when it waited for that
//! segment; with every slot taken, the next one waits (at PASSIVE_LEVEL) for a slot to come
//! back. Slots are taken two ways, and that wait always ends:
//! - under the direct path's cap: its reads' and writes' segments, at most [`SLOTS`] host
//!   operations started and not yet waited for per volume, counted across all its workers.
//!   Among these alone a taker that waits holds a permit for the slot it waits for, so the
//!   others hold fewer than [`SLOTS`] and a slot is free.
//! - outside the cap, one at a time: a direct flush (`KernelHost::flush`, on a worker) and the
//!   wine-host build's legacy I/O thread. Such a taker holds no slot while it waits for one,
//!   and once it has one it only sends its own request and waits for it, so that slot comes
//!   back when the host completes the request, whatever the others wait for.
//!
//! - a small request issued without a waiter (`start_detached`, under the cap too) takes a
//!   slot only if one is free now, never waiting, and its completion routine gives it back
//!   before it reports the request; with none free, its issuer serves it the waiting way.
//!
//! So a capped taker may wait while one-at-a-time takers hold slots, but only until their
//! requests complete. (Were the cap ever larger than [`SLOTS`], workers each holding slots and
//! waiting for one more could wait for each other forever.)

use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};

use wdk_sys::ntddk::{
    DbgPrint, IoAllocateIrp, IoAllocateMdl, IoFreeIrp, IoFreeMdl, IoReuseIrp, IofCallDriver,
    KeInitializeEvent, KeSetEvent, KeWaitForSingleObject, ObfDereferenceObject, ObfReferenceObject,
};
#[cfg(not(feature = "wine-host"))]
use wdk_sys::ntddk::{
    IoBuildPartialMdl, IoSetIoPriorityHint, MmBuildMdlForNonPagedPool, MmUnmapLockedPages,
};
#[cfg(not(feature = "wine-host"))]
use wdk_sys::MDL_PARTIAL_HAS_BEEN_MAPPED;
use wdk_sys::{
    _EVENT_TYPE::SynchronizationEvent, _KWAIT_REASON::Executive, _MODE::KernelMode, DEVICE_OBJECT,
    IRP, IRP_MJ_FLUSH_BUFFERS, IRP_MJ_READ, IRP_MJ_WRITE, IRP_NOCACHE, KEVENT, MDL,
    MDL_ALLOCATED_FIXED_SIZE, MDL_ALLOCATED_MUST_SUCCEED, NTSTATUS, PVOID,
};
#[cfg(feature = "wine-host")]
use wdk_sys::{MDL_MAPPED_TO_SYSTEM_VA, MDL_PARTIAL, MDL_SOURCE_IS_NONPAGED_POOL};

use super::super::codes::nts;
use super::super::remove_lock::{RemoveLock, RemoveLockGuard};
use super::super::sync::KernelSemaphore;
use super::KernelHost;
use crate::io::MAX_DIRECT_REQUEST;
use crate::platform::irql::Call;
use crate::platform::{BufOrigin, Detached, HostIo, Origin, Semaphore};
use crate::Status;

extern "system" {
    /// Exported by ntoskrnl on x64 and ARM64 and by Wine 8.0 (the headers inline it on x64
    /// only; wdm/platform.rs declares it the same way for the security capture).
    fn KeGetCurrentThread() -> wdk_sys::PETHREAD;
}

/// Child-operation slots per volume: the most host operations the volume has in flight at
/// once (the direct path's cap: 8 workers, or 8 segments of requests in flight together).
pub const SLOTS: usize = 8;
/// Page size of the MDL arithmetic (x64 and ARM64 Windows).
const PAGE: usize = 4096;
/// Pages one slot's MDL describes: the largest segment (1 MiB) at any page offset.
const SLOT_MDL_PAGES: usize = MAX_DIRECT_REQUEST as usize / PAGE + 1;
/// Bytes of one page frame number (PFN_NUMBER) after an MDL's header: a ULONG_PTR on x64
/// and ARM64 Windows; Wine 8.0 sizes its MDLs with 4-byte frame numbers (its IoAllocateMdl
/// gives a 257-page MDL a Size of 1076 = 48 + 4 * 257, measured), and keeps none in them.
const PFN_BYTES: usize = if cfg!(feature = "wine-host") { 4 } else { 8 };
/// The least MDL Size (header and page frame numbers) a slot's MDL must have: what
/// IoAllocateMdl allocates for [`SLOT_MDL_PAGES`] pages.
const SLOT_MDL_SIZE: usize = core::mem::size_of::<MDL>() + PFN_BYTES * SLOT_MDL_PAGES;
const _: () = assert!(SLOT_MDL_SIZE <= i16::MAX as usize);
/// SL_INVOKE_ON_CANCEL | SL_INVOKE_ON_SUCCESS | SL_INVOKE_ON_ERROR.
const SL_INVOKE_ALWAYS: u8 = 0x20 | 0x40 | 0x80;
/// IoPriorityNormal (IO_PRIORITY_HINT): the lowest hint a child request carries.
#[cfg(not(feature = "wine-host"))]
const IO_PRIORITY_NORMAL: i32 = 2;
/// SL_WRITE_THROUGH (IO_STACK_LOCATION.Flags of a write).
const SL_WRITE_THROUGH: u8 = 0x04;
/// The MDL flags IoAllocateMdl sets that say how to free it; kept across reuse.
const MDL_ALLOCATION_FLAGS: u32 = MDL_ALLOCATED_FIXED_SIZE | MDL_ALLOCATED_MUST_SUCCEED;

/// Pages spanned by `length` bytes at virtual address `va` (ADDRESS_AND_SIZE_TO_SPAN_PAGES).
const fn span_pages(va: usize, length: usize) -> usize {
    ((va % PAGE) + length).div_ceil(PAGE)
}

/// One child-operation slot.
///
/// # Invariants
/// `irp` (from IoAllocateIrp with the host's StackSize) and `mdl` (from IoAllocateMdl,
/// [`SLOT_MDL_PAGES`] pages; `mdl_size`, at least [`SLOT_MDL_SIZE`], is the Size it was
/// allocated with and has again whenever the slot is free)
/// are ours until [`ChildSlots`] drops; `event` is an initialized
/// synchronization KEVENT that never moves (the slots' vector is never resized). While the
/// slot is taken, its taker alone touches `irp`, `mdl` and waits on `event`; the completion
/// routine only sets `event`.
struct Slot {
    irp: NonNull<IRP>,
    mdl: NonNull<MDL>,
    /// The MDL's Size as IoAllocateMdl set it (its allocation), restored after every use.
    mdl_size: i16,
    event: UnsafeCell<KEVENT>,
    /// A detached request's reporter and the issuing thread it referenced (the IRP's thread,
    /// kept alive until the IRP completed), set by its taker before the IRP is sent and taken
    /// by the completion routine (`detached_done`); `None` for a request its taker waits for.
    detached: UnsafeCell<Option<(Detached, wdk_sys::PETHREAD)>>,
}

/// The volume's child-operation slots, allocated at mount (W6).
///
/// IRQL: `new`, `take` and dropping at PASSIVE_LEVEL.
///
/// # Invariants
/// Bit `i` of `free` is set exactly when slot `i` is not taken; `permits` holds one permit per
/// set bit (released after the bit is set, acquired before one is cleared).
pub(super) struct ChildSlots {
    slots: Vec<Slot>,
    free: AtomicU32,
    permits: KernelSemaphore,
}

// SAFETY: the IRPs, MDLs and events are nonpaged kernel objects owned by the slots; a taken
// slot is used by its taker alone (type invariant), and the free mask is atomic.
unsafe impl Send for ChildSlots {}
// SAFETY: as above; `&ChildSlots` only takes and returns slots atomically.
unsafe impl Sync for ChildSlots {}

impl ChildSlots {
    /// Allocates [`SLOTS`] slots for a host whose device stack is `stack_size` deep. On
    /// failure, frees what was allocated: STATUS_INSUFFICIENT_RESOURCES fails the mount.
    pub(super) fn new(stack_size: i8) -> Result<ChildSlots, Status> {
        let mut slots: Vec<Slot> = Vec::new();
        slots
            .try_reserve_exact(SLOTS)
            .map_err(|_| Status::InsufficientResources)?;
        let mut this = ChildSlots {
            slots,
            free: AtomicU32::new(0),
            permits: KernelSemaphore::try_new(0)?,
        };
        let stack_size = stack_size.max(1);
        for _ in 0..SLOTS {
            super::super::irql::check(Call::BuildIrp);
            // SAFETY: PASSIVE_LEVEL (mount); no quota charge.
            let irp = NonNull::new(unsafe { IoAllocateIrp(stack_size, 0) });
            let Some(irp) = irp else {
                return Err(Status::InsufficientResources);
            };
            // SAFETY: describes no memory yet: only its size matters (SLOT_MDL_PAGES pages
            // from a page-aligned address); not attached to any IRP.
            let mdl = unsafe {
                IoAllocateMdl(
                    core::ptr::null_mut(),
                    (SLOT_MDL_PAGES * PAGE) as u32,
                    0,
                    0,
                    core::ptr::null_mut(),
                )
            };
            let Some(mdl) = NonNull::new(mdl) else {
                // SAFETY: the IRP just allocated, never sent.
                unsafe { IoFreeIrp(irp.as_ptr()) };
                return Err(Status::InsufficientResources);
            };
            // SAFETY: the MDL just allocated, ours alone.
            let mdl_size = unsafe { mdl.as_ref().Size };
            if (mdl_size as usize) < SLOT_MDL_SIZE {
                // Not the capacity asked for: never describe a segment with it.
                // SAFETY: the MDL just allocated, never used.
                unsafe { IoFreeMdl(mdl.as_ptr()) };
                // SAFETY: the IRP just allocated, never sent.
                unsafe { IoFreeIrp(irp.as_ptr()) };
                return Err(Status::InsufficientResources);
            }
            // SAFETY: KEVENT is a plain C struct; all-zero is valid before KeInitializeEvent.
            let event = UnsafeCell::new(unsafe { core::mem::zeroed::<KEVENT>() });
            // Within the reserved capacity: never reallocates, so no slot ever moves.
            this.slots.push(Slot {
                irp,
                mdl,
                mdl_size,
                event,
                detached: UnsafeCell::new(None),
            });
        }
        for slot in &this.slots {
            // SAFETY: the event lives in the vector's buffer, which no longer moves (full to
            // its reserved capacity, never pushed to again) until the slots drop.
            unsafe { KeInitializeEvent(slot.event.get(), SynchronizationEvent, 0) };
        }
        this.free.store((1u32 << SLOTS) - 1, Ordering::Release);
        for _ in 0..SLOTS {
            this.permits.release();
        }
        Ok(this)
    }

    /// Takes a free slot, waiting for one when all are taken. IRQL: PASSIVE_LEVEL.
    fn take(&self) -> usize {
        self.permits.acquire();
        self.claim()
    }

    /// Takes a free slot only if one is free now (never waits). IRQL: <= DISPATCH_LEVEL.
    fn try_take(&self) -> Option<usize> {
        self.permits.try_acquire().then(|| self.claim())
    }

    /// Clears the bit of a free slot for a taker that holds a permit; its index.
    fn claim(&self) -> usize {
        loop {
            let free = self.free.load(Ordering::Acquire);
            // A permit guarantees a set bit (type invariant).
            let index = free.trailing_zeros() as usize;
            if index >= self.slots.len() {
                core::hint::spin_loop();
                continue;
            }
            let bit = 1u32 << index;
            if self
                .free
                .compare_exchange(free, free & !bit, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                return index;
            }
        }
    }

    /// The slot whose IRP is `irp`.
    fn index_of(&self, irp: *mut IRP) -> Option<usize> {
        self.slots.iter().position(|s| s.irp.as_ptr() == irp)
    }

    /// Gives a taken slot back (its IRP completed and its MDL was released).
    fn give_back(&self, index: usize) {
        self.free.fetch_or(1u32 << index, Ordering::AcqRel);
        self.permits.release();
    }
}

impl Drop for ChildSlots {
    /// Frees every slot's IRP and MDL. Runs after the host's remove lock drained (no slot is
    /// taken, no IRP is in flight).
    fn drop(&mut self) {
        for slot in &self.slots {
            // SAFETY: our IRP, not in flight (the host waited for every child).
            unsafe { (*slot.irp.as_ptr()).MdlAddress = core::ptr::null_mut() };
            // SAFETY: as above; its MdlAddress is cleared, so IoFreeIrp (Wine's frees MDL
            // chains) frees the IRP alone.
            unsafe { IoFreeIrp(slot.irp.as_ptr()) };
            // SAFETY: our MDL, released after its last use (not mapped, not in any IRP).
            unsafe { IoFreeMdl(slot.mdl.as_ptr()) };
        }
    }
}

/// What one child request carries (a READ, WRITE or FLUSH_BUFFERS).
pub(super) struct ChildRequest {
    pub(super) major: u32,
    pub(super) offset: u64,
    /// The data's system address (READ and WRITE): writable for a READ.
    pub(super) buffer: *mut u8,
    pub(super) length: usize,
    pub(super) origin: Origin,
}

impl KernelHost {
    /// Starts one child request to the host device in a slot of the volume.
    ///
    /// IRQL: PASSIVE_LEVEL (it may wait for a slot).
    ///
    /// # Safety
    /// For READ and WRITE, `request.buffer` points to `request.length` bytes (writable for a
    /// READ; a WRITE's target only reads them) that stay valid and otherwise untouched until
    /// the returned [`ChildIo`] is waited for or dropped; they are nonpaged pool (an engine
    /// buffer) unless `request.origin.memory` describes them: then they are the system mapping
    /// of the bytes at that offset of that locked upper-request MDL. (wine-host: the legacy
    /// thread may pass the caller's mapping without an origin; Wine's MDLs carry only the
    /// address, so describing it as nonpaged is exact there.) FLUSH_BUFFERS ignores both.
    pub(super) unsafe fn start(&self, request: ChildRequest) -> ChildIo<'_> {
        let guard = match self.children.acquire() {
            Ok(g) => g,
            Err(status) => return ChildIo::failed(self, status),
        };
        let flush = request.major == IRP_MJ_FLUSH_BUFFERS;
        let (Ok(length), Ok(offset)) =
            (u32::try_from(request.length), i64::try_from(request.offset))
        else {
            return ChildIo::failed(self, Status::InvalidParameter);
        };
        // The slot's MDL describes at most SLOT_MDL_PAGES pages; segmentation keeps every
        // segment within that (the largest direct segment is 1 MiB).
        if !flush && span_pages(request.buffer as usize, request.length) > SLOT_MDL_PAGES {
            return ChildIo::failed(self, Status::InvalidParameter);
        }
        let index = self.slots.take();
        let slot = &self.slots.slots[index];
        let sent =
            // SAFETY: the slot is ours until we give it back (ChildSlots invariant); its IRP
            // is not in flight; `device` and `file` are referenced until the host drops, which
            // waits for this request through `guard`; the buffer contract is the caller's.
            unsafe { self.send(slot, &request, flush, length, offset, Completion::Event) };
        if let Err(status) = sent {
            // Nothing was sent: the slot goes back as it is (its MDL describes nothing).
            self.slots.give_back(index);
            return ChildIo::failed(self, status);
        }
        ChildIo {
            host: self,
            slot: Some(Sent {
                index,
                described: !flush,
            }),
            failed: None,
            _guard: Some(guard),
            _buffer: PhantomData,
        }
    }

    /// Builds the request in `slot` and sends it (its completion routine sets the slot's
    /// event); an error means nothing was sent.
    ///
    /// # Safety
    /// As [`start`](Self::start); `slot` is taken by the caller and not in flight.
    unsafe fn send(
        &self,
        slot: &Slot,
        request: &ChildRequest,
        flush: bool,
        length: u32,
        offset: i64,
        completion: Completion,
    ) -> Result<(), Status> {
        let irp = slot.irp.as_ptr();
        // W9 (wine-host build): IoReuseIrp and IRP building, then IoCallDriver (<= DISPATCH).
        super::super::irql::check(Call::BuildIrp);
        // SAFETY: our IRP, not in flight: IoReuseIrp reinitializes it for its StackCount.
        unsafe { IoReuseIrp(irp, 0) };
        // SAFETY: our IRP (as above), not shared with anyone until IofCallDriver.
        let irp_ref = unsafe { &mut *irp };
        // The issuing thread, as IoBuildAsynchronousFsdRequest sets it (IoReuseIrp cleared
        // it): the filters on the host's stack (FltMgr and its minifilters above RAW) see
        // whose request this is. A worker waits for its IRP (`ChildIo` is waited for or
        // dropped before its borrow ends), so it outlives it; a dispatching thread that sent a
        // detached request does not wait, so `start_detached` references it until the IRP
        // completed.
        // SAFETY: no preconditions; the current thread is referenced while it runs.
        irp_ref.Tail.Overlay.Thread = unsafe { KeGetCurrentThread() };
        if !flush {
            // SAFETY: our MDL, released after its last use; the buffer contract is the
            // caller's (`start`).
            let Some(va) = (unsafe { describe(slot.mdl, slot.mdl_size, request, length) }) else {
                return Err(Status::InvalidParameter);
            };
            irp_ref.MdlAddress = slot.mdl.as_ptr();
            irp_ref.UserBuffer = va;
            // W11: uncached, and nothing else. Never the upper request's paging flags: this
            // IRP goes to the host handle's device (RAW and its minifilters, not the disk),
            // where they would claim paging I/O for a section the DASD file object has not.
            irp_ref.Flags = IRP_NOCACHE;
        }
        // The priority hint after Flags: the I/O manager keeps it in Flags' bits, so setting
        // Flags afterwards would wipe it.
        #[cfg(not(feature = "wine-host"))]
        if let Some(hint) = request.origin.priority {
            // The upper request's priority (IoReuseIrp reset the child's), never below normal:
            // a disk class driver holds very-low and low requests in its idle queue, and a
            // child held there keeps one of the volume's 8 slots from normal and paging I/O
            // behind it. A hint the kernel refuses leaves the default: no status needed.
            let hint = i32::from(hint).max(IO_PRIORITY_NORMAL);
            // SAFETY: our IRP, not in flight; IRQL <= DISPATCH_LEVEL.
            let _ = unsafe { IoSetIoPriorityHint(irp, hint) };
        }
        // SAFETY: after IoReuseIrp the Overlay arm of Tail is the one in use.
        let current = unsafe { irp_ref.Tail.Overlay.__bindgen_anon_2.__bindgen_anon_1 };
        // SAFETY: its CurrentStackLocation arm is the one in use.
        let location = unsafe { current.CurrentStackLocation };
        // SAFETY: the next location (the target's, IoGetNextIrpStackLocation) lies inside the
        // IRP we own (StackCount >= 1).
        let next = unsafe { &mut *location.wrapping_sub(1) };
        next.MajorFunction = request.major as u8;
        next.FileObject = self.file;
        if !flush {
            // SAFETY: the Read arm of the parameter union (Write has the same layout).
            let read = unsafe { &mut next.Parameters.Read };
            read.Length = length;
            read.ByteOffset.QuadPart = offset;
            if request.major == IRP_MJ_WRITE {
                next.Flags |= SL_WRITE_THROUGH;
            }
        }
        match completion {
            Completion::Event => {
                next.CompletionRoutine = Some(child_done);
                next.Context = slot.event.get().cast();
            }
            Completion::Detached => {
                next.CompletionRoutine = Some(detached_done);
                next.Context = core::ptr::from_ref(self).cast_mut().cast();
            }
        }
        next.Control = SL_INVOKE_ALWAYS;
        super::super::irql::check(Call::CallDriver);
        // SAFETY: the IRP is fully built; the completion routine always runs (invoked on
        // success, error and cancel) and only sets the slot's event, which lives until the
        // slots drop (after every child completed). The status is read from the IRP after
        // the event, so the call's result is ignored here.
        let _ = unsafe { IofCallDriver(self.device.as_ptr(), irp) };
        Ok(())
    }

    /// Starts a detached READ or WRITE in a slot free now: its completion routine reports it
    /// to `then` (the engine decrypts a read and finishes the request there) instead of
    /// setting an event. `Err`: nothing was sent (no slot free without waiting, removal begun,
    /// or a request the slot cannot describe) and `then` is dropped unreported.
    ///
    /// IRQL: PASSIVE_LEVEL (a worker, or the dispatching thread in `Platform::issue_here`);
    /// this driver's code never waits (the host's stack below IofCallDriver may).
    ///
    /// # Safety
    /// As [`start`](Self::start), except for how long the buffer stays valid: a READ's bytes at
    /// `request.buffer` are the system mapping of the upper request's locked MDL that
    /// `request.origin.memory` names, and that upper request is completed only after `then`
    /// was told; a WRITE's are nonpaged pool (a detached slot's bounce buffer) that stays
    /// allocated and untouched until then (the engine keeps both in its slot until then).
    pub(super) unsafe fn start_detached(
        &self,
        request: ChildRequest,
        then: Detached,
    ) -> Result<(), Status> {
        let (Ok(length), Ok(offset)) =
            (u32::try_from(request.length), i64::try_from(request.offset))
        else {
            return Err(Status::InvalidParameter);
        };
        // A read lands in the caller's memory (a partial MDL of its MDL); a write comes from
        // an engine buffer (nonpaged pool).
        let described = match request.major {
            IRP_MJ_WRITE => request.origin.memory.is_none(),
            IRP_MJ_READ => request.origin.memory.is_some(),
            _ => false,
        };
        if !described || span_pages(request.buffer as usize, request.length) > SLOT_MDL_PAGES {
            return Err(Status::InvalidParameter);
        }
        let Some(index) = self.slots.try_take() else {
            return Err(Status::DeviceBusy);
        };
        let slot = &self.slots.slots[index];
        // Tagged with the slot's IRP (an identity only: the product's headers define no DBG
        // block, so nothing tracks tags); released by the completion routine with the same
        // tag, after the report.
        let tag = slot.irp.as_ptr().cast();
        let guard = match self.children.acquire_tagged(tag) {
            Ok(guard) => guard,
            Err(status) => {
                self.slots.give_back(index);
                return Err(status);
            }
        };
        // The IRP names this thread (as IoBuildAsynchronousFsdRequest does), and the thread
        // may end before the IRP completes (nobody waits for it here): referenced until then.
        let thread = super::super::thread::current_thread();
        // SAFETY: the current thread, a valid object; the reference is dropped in
        // `finish_detached` (or below when nothing is sent).
        unsafe { ObfReferenceObject(thread.cast()) };
        // SAFETY: the slot is ours (just taken) and its IRP not in flight: nobody else reads
        // this cell until the completion routine, which runs after IofCallDriver below.
        unsafe { *slot.detached.get() = Some((then, thread)) };
        let tag = guard.keep();
        let sent =
            // SAFETY: the slot is ours; the buffer contract is the caller's; the host and its
            // slots live until `drain` or the host's drop waited for this request's completion
            // routine (it holds the kept remove-lock acquisition until its last step).
            unsafe { self.send(slot, &request, false, length, offset, Completion::Detached) };
        if let Err(status) = sent {
            // Nothing was sent: the reporter, the thread reference, the slot and the
            // acquisition go back.
            // SAFETY: the slot is still ours; the completion routine never runs.
            if let Some((_, thread)) = unsafe { (*slot.detached.get()).take() } {
                // SAFETY: the reference taken above, dropped once.
                unsafe { ObfDereferenceObject(thread.cast()) };
            }
            self.slots.give_back(index);
            // SAFETY: the acquisition kept above, released once.
            unsafe { self.children.release_kept(tag) };
            return Err(status);
        }
        Ok(())
    }

    /// The end of a detached request (its completion routine, IRQL <= DISPATCH_LEVEL): releases
    /// the slot's MDL, gives the slot back, reports the outcome to the engine (which decrypts
    /// and finishes the upper request, never waiting), and last releases the host's remove
    /// lock, so `drain` returns only once nothing here touches the engine or the host.
    fn finish_detached(&self, irp: *mut IRP) {
        let Some(index) = self.slots.index_of(irp) else {
            // Never: only the slots' IRPs get this routine. Its acquisition (tagged with the
            // IRP) is released all the same, so `drain` cannot hang on it.
            log_unknown_irp();
            // SAFETY: every detached IRP holds one acquisition tagged with itself.
            unsafe { self.children.release_kept(irp.cast()) };
            return;
        };
        let slot = &self.slots.slots[index];
        // SAFETY: the completion routine runs once per sent IRP; the I/O manager handed the
        // IRP back (MORE_PROCESSING_REQUIRED follows); the slot is taken by this request.
        let irp_ref = unsafe { &mut *irp };
        // SAFETY: the Status arm of the status block is the one a driver completes with.
        let status = unsafe { irp_ref.IoStatus.__bindgen_anon_1.Status };
        let information = irp_ref.IoStatus.Information;
        irp_ref.MdlAddress = core::ptr::null_mut();
        // SAFETY: the slot's MDL, used by the completed IRP only (a detached READ or WRITE
        // always describes data); MmUnmapLockedPages, when a driver below mapped a partial
        // MDL, is allowed at IRQL <= DISPATCH_LEVEL.
        unsafe { release(slot.mdl, slot.mdl_size) };
        // SAFETY: set by `start_detached` before the IRP was sent; read here once.
        let detached = unsafe { (*slot.detached.get()).take() };
        self.slots.give_back(index);
        let result = if status < 0 {
            Err(Status::from_ntstatus(status as u32))
        } else {
            Ok(information as usize)
        };
        if let Some((then, thread)) = detached {
            // SAFETY: the issuing thread's reference `start_detached` took; dropping it is
            // allowed at IRQL <= DISPATCH_LEVEL (the thread object's deletion is deferred).
            unsafe { ObfDereferenceObject(thread.cast()) };
            then.report(result);
        }
        // SAFETY: the acquisition `start_detached` kept, tagged with this IRP.
        unsafe { self.children.release_kept(irp.cast()) };
    }

    /// Waits until every child request's completion routine released the host (the volume's
    /// dismount, after every request finished): afterwards no detached request's routine
    /// touches the engine or holds the volume. Further child requests fail (removal has begun). Idempotent.
    ///
    /// IRQL: PASSIVE_LEVEL.
    pub(super) fn drain_children(&self) {
        if let Ok(guard) = self.children.acquire() {
            RemoveLock::release_and_wait(guard);
        }
    }

    /// Waits for the request `sent`, releases its MDL and the slot, and returns its outcome.
    fn finish(&self, sent: Sent) -> Result<usize, Status> {
        let Sent { index, described } = sent;
        let slot = &self.slots.slots[index];
        super::super::irql::check(Call::Wait);
        // SAFETY: the slot's initialized event; kernel-mode, non-alertable wait without
        // timeout at PASSIVE_LEVEL. A synchronization event: the wait resets it for the next use.
        let _ = unsafe {
            KeWaitForSingleObject(
                slot.event.get().cast(),
                Executive,
                KernelMode as i8,
                0,
                core::ptr::null_mut(),
            )
        };
        let irp = slot.irp.as_ptr();
        // SAFETY: the completion routine ran and returned MORE_PROCESSING_REQUIRED, so the I/O
        // manager handed the IRP back to us; nobody else touches it (slot taken).
        let irp_ref = unsafe { &mut *irp };
        // SAFETY: the Status arm of the status block is the one a driver completes with.
        let status = unsafe { irp_ref.IoStatus.__bindgen_anon_1.Status };
        let information = irp_ref.IoStatus.Information;
        // Whatever MdlAddress says now (a filter may have swapped it and not put it back),
        // the slot's own MDL is released when the slot described data with it: a mapping a
        // driver below made of the partial MDL is undone, never leaked.
        irp_ref.MdlAddress = core::ptr::null_mut();
        if described {
            // SAFETY: the slot's MDL, used by the completed IRP only.
            unsafe { release(slot.mdl, slot.mdl_size) };
        }
        self.slots.give_back(index);
        if status < 0 {
            Err(Status::from_ntstatus(status as u32))
        } else {
            Ok(information as usize)
        }
    }
}

/// Describes the request's data with the slot's MDL; returns the data's virtual address as the
/// MDL describes it (MmGetMdlVirtualAddress), or `None` (logged) when the MDL's Size cannot
/// hold the span's page frame numbers.
///
/// # Safety
/// `mdl` is a slot's MDL, released after its last use, allocated with Size `mdl_size`; the
/// request's buffer contract
/// ([`KernelHost::start`]) holds, and `length` spans at most [`SLOT_MDL_PAGES`] pages from the
/// data's address.
unsafe fn describe(
    mdl: NonNull<MDL>,
    mdl_size: i16,
    request: &ChildRequest,
    length: u32,
) -> Option<PVOID> {
    // SAFETY: our MDL, not in use (contract).
    let m = unsafe { &mut *mdl.as_ptr() };
    let kept = m.MdlFlags as u32 & MDL_ALLOCATION_FLAGS;
    // The whole allocation, whatever the last use left (`release` restores it too):
    // IoBuildPartialMdl checks the span against Size and leaves Size as it is (bugcheck 0x40,
    // TARGET_MDL_TOO_SMALL, were it still a smaller write's).
    m.Size = mdl_size;
    match request.origin.memory {
        // A read into the caller's buffer: a partial MDL of the upper request's (locked) MDL.
        Some(origin) => {
            let (source, va) = source_va(origin);
            if mdl_pages(m) < span_pages(va as usize, length as usize) {
                // Unreachable while Size is restored above; a request refused here beats
                // IoBuildPartialMdl's bugcheck, and the wine-host e2e sees the failure.
                log_mdl_too_small();
                return None;
            }
            #[cfg(not(feature = "wine-host"))]
            // SAFETY: `source` is the upper request's MDL (locked by the I/O manager until the
            // upper IRP completes, which waits for this child), `va..va+length` lies inside it
            // (contract), and `m` holds SLOT_MDL_PAGES pages, enough for the range.
            unsafe {
                IoBuildPartialMdl(source, mdl.as_ptr(), va, length)
            };
            #[cfg(feature = "wine-host")]
            {
                // Wine 8.0 exports IoBuildPartialMdl as a stub that raises: fill in the fields
                // it would (Wine's MDLs carry no page frame numbers; its drivers read the
                // system address). `va` comes from the source MDL as on Windows, so the test
                // disk's check of ByteOffset against the system address tests this arithmetic.
                let _ = source;
                m.Next = core::ptr::null_mut();
                m.StartVa = ((va as usize) & !(PAGE - 1)) as PVOID;
                m.ByteOffset = (va as usize % PAGE) as u32;
                m.ByteCount = length;
                m.MappedSystemVa = request.buffer.cast();
                m.MdlFlags = (kept | MDL_PARTIAL | MDL_MAPPED_TO_SYSTEM_VA) as i16;
            }
            Some(va)
        }
        // An engine buffer (nonpaged pool): MmInitializeMdl, then MmBuildMdlForNonPagedPool.
        None => {
            let va = request.buffer as usize;
            m.Next = core::ptr::null_mut();
            m.Size =
                (core::mem::size_of::<MDL>() + PFN_BYTES * span_pages(va, length as usize)) as i16;
            m.StartVa = (va & !(PAGE - 1)) as PVOID;
            m.ByteOffset = (va % PAGE) as u32;
            m.ByteCount = length;
            m.MdlFlags = kept as i16;
            #[cfg(not(feature = "wine-host"))]
            // SAFETY: a freshly initialized MDL over nonpaged pool (contract) within its
            // capacity.
            unsafe {
                MmBuildMdlForNonPagedPool(mdl.as_ptr())
            };
            #[cfg(feature = "wine-host")]
            {
                // Wine 8.0's MmBuildMdlForNonPagedPool does nothing: set what it would.
                m.MappedSystemVa = va as PVOID;
                m.MdlFlags = (kept | MDL_SOURCE_IS_NONPAGED_POOL) as i16;
            }
            Some(va as PVOID)
        }
    }
}

/// The upper request's MDL and the virtual address (as that MDL describes it) of `origin`.
fn source_va(origin: BufOrigin) -> (*mut MDL, PVOID) {
    let source = origin.descriptor as *mut MDL;
    // SAFETY: the descriptor of a kernel IrpBuf is its IRP's MDL, valid while the request is
    // not completed (KernelHost::start's contract); read only.
    let source_ref = unsafe { &*source };
    let (start, offset) = (source_ref.StartVa as usize, source_ref.ByteOffset as usize);
    (source, (start + offset + origin.offset) as PVOID)
}

/// MmPrepareMdlForReuse, written out (a macro), then the flags a fresh MDL has.
///
/// # Safety
/// `mdl` is a slot's MDL whose IRP completed, allocated with Size `mdl_size`.
unsafe fn release(mdl: NonNull<MDL>, mdl_size: i16) {
    // SAFETY: our MDL, no longer used by any IRP (contract).
    let m = unsafe { &mut *mdl.as_ptr() };
    #[cfg(not(feature = "wine-host"))]
    if m.MdlFlags as u32 & MDL_PARTIAL_HAS_BEEN_MAPPED != 0 {
        // A driver below mapped the partial MDL: undo that mapping (the upper MDL's own
        // mapping is untouched).
        // SAFETY: the mapping MmGetSystemAddressForMdlSafe made of this partial MDL.
        unsafe { MmUnmapLockedPages(m.MappedSystemVa, mdl.as_ptr()) };
    }
    // An MDL built for nonpaged pool (MDL_SOURCE_IS_NONPAGED_POOL) needs no undoing.
    m.MdlFlags = (m.MdlFlags as u32 & MDL_ALLOCATION_FLAGS) as i16;
    m.MappedSystemVa = core::ptr::null_mut();
    // A write's MmInitializeMdl shrank Size to its span: give the next use the whole MDL.
    m.Size = mdl_size;
}

/// Page frame numbers an MDL's Size holds ((Size - sizeof(MDL)) / sizeof(PFN_NUMBER)), as
/// IoBuildPartialMdl checks it.
fn mdl_pages(m: &MDL) -> usize {
    (m.Size as usize).saturating_sub(core::mem::size_of::<MDL>()) / PFN_BYTES
}

/// Reports a slot MDL too small for a segment (never expected: `describe` restores its Size).
fn log_mdl_too_small() {
    // SAFETY: a NUL-terminated format without arguments; DbgPrint is callable at any IRQL
    // at or below DIRQL for a string without %wZ.
    let _ = unsafe { DbgPrint(c"vcdirect: child request refused: slot MDL too small\n".as_ptr()) };
}

/// Completion routine of a child request: runs at IRQL <= DISPATCH_LEVEL in an arbitrary
/// thread, sets the slot's event, keeps the IRP (the slot's taker reads and reuses it).
unsafe extern "C" fn child_done(
    _device: *mut DEVICE_OBJECT,
    _irp: *mut IRP,
    context: PVOID,
) -> NTSTATUS {
    // W9, wine-host build: a completion routine runs at virtual DISPATCH_LEVEL (Windows calls
    // it at <= DISPATCH_LEVEL, often from a DPC).
    let _dispatch_level = super::super::irql::Raised::to_dispatch();
    // SAFETY: `context` is the slot's KEVENT, alive until the slots drop, which happens only
    // after every child completed; KeSetEvent is callable at IRQL <= DISPATCH_LEVEL.
    unsafe { KeSetEvent(context.cast(), 0, 0) };
    nts::MORE_PROCESSING_REQUIRED
}

/// Completion routine of a detached request: runs at IRQL <= DISPATCH_LEVEL in an arbitrary
/// thread (possibly the issuing thread, inside IofCallDriver), reports the request and keeps
/// the IRP (its slot is free again). Its last call is the remove-lock release that `drain`
/// waits for; only the return follows (docs/design.md §5, sys/README.md on unload).
unsafe extern "C" fn detached_done(
    _device: *mut DEVICE_OBJECT,
    irp: *mut IRP,
    context: PVOID,
) -> NTSTATUS {
    // W9, wine-host build: a completion routine runs at virtual DISPATCH_LEVEL.
    let _dispatch_level = super::super::irql::Raised::to_dispatch();
    // SAFETY: `context` is the KernelHost that sent the IRP; it lives until its drain or drop
    // waited for the remove-lock acquisition this request holds until `finish_detached`'s
    // last step.
    let host = unsafe { &*context.cast::<KernelHost>() };
    host.finish_detached(irp);
    nts::MORE_PROCESSING_REQUIRED
}

/// Reports an IRP no slot owns at the detached completion (never expected).
fn log_unknown_irp() {
    // SAFETY: a NUL-terminated format without arguments; callable at IRQL <= DIRQL.
    let _ = unsafe { DbgPrint(c"vcdirect: detached completion of an unknown IRP\n".as_ptr()) };
}

/// What a child request's completion routine does.
#[derive(Clone, Copy)]
enum Completion {
    /// Sets the slot's event (the taker waits for it).
    Event,
    /// Reports a detached request (`detached_done`).
    Detached,
}

/// A child request sent from a slot.
#[derive(Clone, Copy)]
struct Sent {
    index: usize,
    /// The slot's MDL describes the request's data (a READ or WRITE; a flush has none).
    described: bool,
}

/// A started child request (the engine's `HostIo`). Waiting or dropping blocks until the
/// IRP completed, then gives its slot back (R13: never abandoned, no timeout).
pub struct ChildIo<'a> {
    host: &'a KernelHost,
    /// The slot whose IRP is in flight (`None` once finished, or when nothing was sent).
    slot: Option<Sent>,
    failed: Option<Status>,
    _guard: Option<RemoveLockGuard<'a>>,
    _buffer: PhantomData<&'a mut [u8]>,
}

impl<'a> ChildIo<'a> {
    fn failed(host: &'a KernelHost, status: Status) -> Self {
        ChildIo {
            host,
            slot: None,
            failed: Some(status),
            _guard: None,
            _buffer: PhantomData,
        }
    }

    fn finish(&mut self) -> Result<usize, Status> {
        match (self.slot.take(), self.failed) {
            (Some(sent), _) => self.host.finish(sent),
            (None, Some(status)) => Err(status),
            (None, None) => Err(Status::IoDeviceError),
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
        if self.slot.is_some() {
            let _ = self.finish();
        }
    }
}
