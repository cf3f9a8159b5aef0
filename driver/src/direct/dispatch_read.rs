//! Reads issued on the dispatching thread and finished where the host completes them: one
//! thread hand-off per request (the work item of the completion stage, docs/review.md R1)
//! instead of three.
//!
//! Owns: when a granted direct read may skip the workers ([`DispatchReads::may_take`] and
//! `DirectPath::issue_here`), the volume's detached-read slots (one per host permit, made at
//! mount: nothing is allocated per request, W6), and finishing such a read: decrypting it in
//! the host's completion context under the key's rundown (R3), giving its permit back and
//! handing it to the `Finisher` (range release, completion stage).
//! Never: waits (it runs on the issuer's thread and at DISPATCH_LEVEL in completion routines),
//! overtakes a job queued in the direct FIFO or a worker waiting for a permit (R12), or runs
//! upper completion code (the completion stage's work item does, R1).
//!
//! Who finishes: the host may report the end before `start_read_detached` has returned (a
//! synchronous completion, on the issuing thread or another CPU), so the issuer keeps the
//! caller's buffer until the start returned and parks it in the slot afterwards. Of the
//! issuer parking the buffer and the host reporting the end, the second one finishes the
//! read.

use crate::barrier::Ticket;
use crate::io::JobKind;
use crate::platform::{Lock, Platform, UpperRequest};
use crate::Status;

use super::HOST_OPS;

/// The largest read the dispatching thread issues: its decryption runs in the host's
/// completion context (DISPATCH_LEVEL, often a DPC, which should stay under about 100 us even
/// when several of these complete in one DPC). 32 KiB decrypts in about 6 us with AES-NI at
/// 5.5 GB/s (`vcbench crypto`, docs/measurements.md), so the 8 a volume can have in flight
/// stay near 50 us; a larger read, or any read without hardware AES, goes to the workers.
pub const DISPATCH_READ_MAX: u32 = 32 * 1024;

/// Kernel stack the dispatching thread must have left to issue a read itself
/// (IoGetRemainingStackSize). From the figures `scripts/check-sys.sh` measures on the images
/// (x64; ARM64's are smaller): this path's own frames down to IofCallDriver (under 3 KiB of the
/// 5.5 KiB dispatch path, whose deepest branch is the decryption of a read the host completed
/// before its start returned) and this read's completion routine when the host completes it
/// on this thread (5.2 KiB, the completion path); the rest, 8 KiB, is left to the host's
/// device stack below IofCallDriver (the file system or RAW on the host volume, its filters,
/// volume snapshot and encryption drivers, partition, disk and port drivers, and Driver
/// Verifier's wrappers when it runs), which is not measured here. Less than this left: the
/// workers issue it.
pub const DISPATCH_STACK_NEEDED: usize = 16 * 1024;

/// A read in flight from the dispatching thread, parked in its slot.
pub(super) struct Parked<R: UpperRequest> {
    /// The upper request, parked with its buffer once the issuer's start returned.
    pub(super) request: Option<R>,
    pub(super) ticket: Ticket,
    pub(super) length: u32,
    /// Absolute data unit of the first byte.
    pub(super) unit: u64,
    /// The caller's buffer, parked with its request once the issuer's start returned.
    pub(super) buf: Option<R::Buf>,
    /// The host's report, once it came.
    pub(super) result: Option<Result<usize, Status>>,
}

/// The volume's detached-read slots. See the module documentation.
pub(crate) struct DispatchReads<P: Platform> {
    slots: [P::Lock<Option<Parked<P::Request>>>; HOST_OPS],
}

impl<P: Platform> DispatchReads<P> {
    pub(super) fn new() -> Self {
        DispatchReads {
            slots: core::array::from_fn(|_| P::Lock::new(None)),
        }
    }

    /// A read this path may issue from the dispatching thread: at most
    /// [`DISPATCH_READ_MAX`] bytes, one segment, hardware AES (the decryption must be short).
    pub(super) fn may_take(kind: JobKind, length: u32, segment: usize) -> bool {
        kind == JobKind::Read
            && length <= DISPATCH_READ_MAX
            && segment == length as usize
            && crate::crypto::hardware_aes()
    }

    /// Reserves a free slot for a read about to start, `parked` holding no request and no
    /// buffer yet (the caller holds a host permit, and every parked read holds one, so one is
    /// free); its index, or `parked` back if none is (never expected).
    pub(super) fn park(&self, parked: Parked<P::Request>) -> Result<usize, Parked<P::Request>> {
        let mut parked = parked;
        for (index, slot) in self.slots.iter().enumerate() {
            let refused = slot.with(|s| match s {
                None => {
                    *s = Some(parked);
                    None
                }
                Some(_) => Some(parked),
            });
            match refused {
                None => return Ok(index),
                Some(back) => parked = back,
            }
        }
        Err(parked)
    }

    /// Frees slot `index` and hands back what it held (the start failed or was not made:
    /// nothing was issued).
    pub(super) fn unpark(&self, index: usize) -> Option<Parked<P::Request>> {
        self.slots.get(index)?.with(Option::take)
    }

    /// The issuer's start returned: parks the request and its buffer. The read when the host
    /// has reported already (the issuer finishes it).
    pub(super) fn started(
        &self,
        index: usize,
        request: P::Request,
        buf: <P::Request as UpperRequest>::Buf,
    ) -> Option<Parked<P::Request>> {
        self.slots.get(index)?.with(|s| {
            let parked = s.as_mut()?;
            parked.request = Some(request);
            parked.buf = Some(buf);
            parked.result.as_ref()?;
            s.take()
        })
    }

    /// The host reported the end of read `index`: the read when its buffer is parked already
    /// (the host's completion context finishes it).
    pub(super) fn ended(
        &self,
        index: usize,
        result: Result<usize, Status>,
    ) -> Option<Parked<P::Request>> {
        self.slots.get(index)?.with(|s| {
            let parked = s.as_mut()?;
            parked.result = Some(result);
            parked.buf.as_ref()?;
            s.take()
        })
    }
}
