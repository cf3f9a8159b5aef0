//! Requests issued without a thread waiting for them, finished where the host completes them:
//! a small direct read or write issued by the thread that dispatched it (one thread hand-off
//! per request, the completion stage's work item, docs/review.md R1, instead of three), or by a
//! worker that goes on to its next job instead of waiting for the child request.
//!
//! Owns: which requests may go this way ([`Slots::may_take`]), the volume's detached slots (one
//! per host permit, made at mount, each with a write bounce buffer when direct writes are
//! effective: nothing is allocated per request, W6), and what they hold while the host works:
//! the upper request, its buffer, the write's ciphertext.
//! Never: waits (its callers run on the issuer's thread and at DISPATCH_LEVEL in completion
//! routines), decides who may issue or whether a job is overtaken (`DirectPath::issue_here`),
//! or runs upper completion code (the completion stage's work item does, R1).
//!
//! Who finishes: the host may report the end before its start has returned (a synchronous
//! completion, on the issuing thread or another CPU), so the issuer keeps the request and its
//! buffers until the start returned and parks them in the slot afterwards. Of the issuer
//! parking them and the host reporting the end, the second one finishes the request.

use crate::barrier::Ticket;
use crate::faults::{self, Fault};
use crate::io::{AlignedBuffer, JobKind};
use crate::platform::{Lock, Platform, UpperRequest};
use crate::Status;

use super::HOST_OPS;

/// The largest request issued this way: a read's decryption runs in the host's completion
/// context (DISPATCH_LEVEL, often a DPC, which should stay under about 100 us even when
/// several of these complete in one DPC), and a write's ciphertext waits in its slot's bounce
/// buffer (8 of this size per volume with direct writes). 32 KiB decrypts in about 6 us with
/// AES-NI at 5.5 GB/s (`vcbench crypto`, docs/measurements.md), so the 8 a volume can have in
/// flight stay near 50 us; a larger request, or any without hardware AES, is waited for by a
/// worker as before.
pub const DETACHED_MAX: u32 = 32 * 1024;

/// Kernel stack the dispatching thread must have left to issue a request itself
/// (IoGetRemainingStackSize). From the figures `scripts/check-sys.sh` measures on the images
/// (x64; ARM64's are smaller): this path's own frames down to IofCallDriver (under 3 KiB of the
/// 5.8 KiB dispatch path, whose deepest branches are a write's encryption before the start and
/// the decryption of a read the host completed before its start returned, both above the
/// host's frames, not below them) and the request's completion routine when the host
/// completes it on this thread (6.3 KiB, the completion path, its crypto over-counted); the rest, 8 KiB, is left to the host's
/// device stack below IofCallDriver (the file system or RAW on the host volume, its filters,
/// volume snapshot and encryption drivers, partition, disk and port drivers, and Driver
/// Verifier's wrappers when it runs), which is not measured here. Less than this left: the
/// workers issue it.
pub const DISPATCH_STACK_NEEDED: usize = 16 * 1024;

/// A request in flight without a waiter, parked in its slot.
pub(super) struct Parked<R: UpperRequest> {
    /// The upper request, parked with its buffer once the issuer's start returned.
    pub(super) request: Option<R>,
    pub(super) kind: JobKind,
    pub(super) ticket: Ticket,
    pub(super) length: u32,
    /// Absolute data unit of the first byte.
    pub(super) unit: u64,
    /// The caller's buffer, parked with its request once the issuer's start returned.
    pub(super) buf: Option<R::Buf>,
    /// The host's report, once it came.
    pub(super) result: Option<Result<usize, Status>>,
}

/// One slot: what is parked there, and its write bounce buffer while nobody has taken it out.
struct Slot<R: UpperRequest> {
    parked: Option<Parked<R>>,
    bounce: Option<AlignedBuffer>,
}

/// The volume's detached slots. See the module documentation.
pub(crate) struct Slots<P: Platform> {
    slots: [P::Lock<Slot<P::Request>>; HOST_OPS],
}

impl<P: Platform> Slots<P> {
    /// Slots whose bounce buffers `bounce` makes (none: no detached writes).
    pub(super) fn new(
        mut bounce: impl FnMut() -> Result<Option<AlignedBuffer>, Status>,
    ) -> Result<Self, Status> {
        let mut made: [Option<AlignedBuffer>; HOST_OPS] = core::array::from_fn(|_| None);
        for b in made.iter_mut() {
            *b = bounce()?;
        }
        let mut made = made.into_iter();
        Ok(Slots {
            slots: core::array::from_fn(|_| {
                P::Lock::new(Slot {
                    parked: None,
                    bounce: made.next().flatten(),
                })
            }),
        })
    }

    /// A request this path may issue without waiting for it: a read or write of at most
    /// [`DETACHED_MAX`] bytes in one segment, on a volume whose algorithm is AES alone on the
    /// AES instructions (`hardware_aes`: a read's decryption, run in the host's completion
    /// routine, must be short; the other algorithms' requests go to the path's workers, which
    /// serve every algorithm); a write only while the slots have bounce buffers (`writes`).
    pub(super) fn may_take(
        kind: JobKind,
        length: u32,
        segment: usize,
        writes: bool,
        hardware_aes: bool,
    ) -> bool {
        let kind_ok = match kind {
            JobKind::Read => true,
            JobKind::Write => writes,
            JobKind::Flush | JobKind::Verify => false,
        };
        kind_ok && length <= DETACHED_MAX && segment == length as usize && hardware_aes
    }

    /// Reserves a free slot for a request about to start, `parked` holding no request and no
    /// buffer yet (the caller holds a host permit, and every parked request holds one, so one
    /// is free); its index and, for a write, its bounce buffer (taken out until the request is
    /// parked); or `parked` back if no slot is free (never expected).
    pub(super) fn park(
        &self,
        parked: Parked<P::Request>,
    ) -> Result<(usize, Option<AlignedBuffer>), Parked<P::Request>> {
        let write = parked.kind == JobKind::Write;
        let mut parked = parked;
        for (index, slot) in self.slots.iter().enumerate() {
            let refused = slot.with(|s| match s.parked {
                None => {
                    s.parked = Some(parked);
                    Err(if write { s.bounce.take() } else { None })
                }
                Some(_) => Ok(parked),
            });
            match refused {
                Err(bounce) => return Ok((index, bounce)),
                Ok(back) => parked = back,
            }
        }
        Err(parked)
    }

    /// Frees slot `index` (its start failed or was not made: nothing was issued), putting
    /// `bounce` back; what it held.
    pub(super) fn unpark(
        &self,
        index: usize,
        bounce: Option<AlignedBuffer>,
    ) -> Option<Parked<P::Request>> {
        self.slots.get(index)?.with(|s| {
            if bounce.is_some() {
                s.bounce = bounce;
            }
            s.parked.take()
        })
    }

    /// The issuer's start returned: parks the request, its buffer and the bounce buffer. The
    /// request when the host has reported already (the issuer finishes it).
    pub(super) fn started(
        &self,
        index: usize,
        request: P::Request,
        buf: <P::Request as UpperRequest>::Buf,
        bounce: Option<AlignedBuffer>,
    ) -> Option<Parked<P::Request>> {
        self.slots.get(index)?.with(|s| {
            if bounce.is_some() {
                s.bounce = bounce;
            }
            let parked = s.parked.as_mut()?;
            parked.request = Some(request);
            parked.buf = Some(buf);
            parked.result.as_ref()?;
            s.parked.take()
        })
    }

    /// The host reported the end of request `index`: the request when it is parked already
    /// (the host's completion context finishes it).
    pub(super) fn ended(
        &self,
        index: usize,
        result: Result<usize, Status>,
    ) -> Option<Parked<P::Request>> {
        self.slots.get(index)?.with(|s| {
            let parked = s.parked.as_mut()?;
            parked.result = Some(result);
            if !faults::is_on(Fault::DetachedReportBeforePark) {
                parked.buf.as_ref()?;
            }
            s.parked.take()
        })
    }
}

/// What a slot handed over when a request finished: the parts the issuer parked and the
/// host's report (a request missing any of them would be lost or finished wrong).
pub struct HandedOver<R: UpperRequest> {
    /// The upper request.
    pub request: Option<R>,
    /// Its buffer.
    pub buf: Option<R::Buf>,
    /// The host's report.
    pub result: Option<Result<usize, Status>>,
}

/// The slots' hand-off between the issuer and the host's report, alone (for the loom model
/// `tests-usermode/tests/loom_models/detached.rs`): reserve a slot, then the issuer's
/// `started` and the host's `ended` race; the second one gets the request to finish.
pub struct Handoff<P: Platform>(Slots<P>);

impl<P: Platform> Handoff<P> {
    /// Slots without bounce buffers (reads).
    pub fn new() -> Result<Self, Status> {
        Ok(Handoff(Slots::new(|| Ok(None))?))
    }

    /// Reserves a slot for a read about to start (the path's `park`).
    pub fn reserve(&self) -> Option<usize> {
        self.0
            .park(Parked {
                request: None,
                kind: JobKind::Read,
                ticket: Ticket::placeholder(),
                length: 0,
                unit: 0,
                buf: None,
                result: None,
            })
            .ok()
            .map(|(index, _)| index)
    }

    /// The issuer parks `request` and `buf`: what to finish, if the host reported first.
    pub fn started(
        &self,
        index: usize,
        request: P::Request,
        buf: <P::Request as UpperRequest>::Buf,
    ) -> Option<HandedOver<P::Request>> {
        self.0.started(index, request, buf, None).map(handed_over)
    }

    /// The host reports: what to finish, if the issuer parked first.
    pub fn ended(
        &self,
        index: usize,
        result: Result<usize, Status>,
    ) -> Option<HandedOver<P::Request>> {
        self.0.ended(index, result).map(handed_over)
    }
}

fn handed_over<R: UpperRequest>(parked: Parked<R>) -> HandedOver<R> {
    HandedOver {
        request: parked.request,
        buf: parked.buf,
        result: parked.result,
    }
}
