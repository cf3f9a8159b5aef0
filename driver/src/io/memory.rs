//! What one mounted volume holds in engine buffers, by purpose. Every figure is
//! the byte length of the allocations themselves (alignment slack included), recorded when
//! they are made at mount, so the report is what was allocated, not a formula beside it.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::{faults, Status};

/// What `Arc::new` allocates for a `T`: `alloc::sync::ArcInner<T>`, a `#[repr(C)]` struct of
/// the strong and weak counts followed by the value. The kernel's `try_arc` reserves a block
/// of this layout and hands it to `Arc::new` (W6); `tests-usermode/tests/w6_arc_layout.rs`
/// checks on every toolchain CI builds with that `Arc::new::<T>` asks exactly
/// `Layout::new::<ArcShape<T>>()`.
#[doc(hidden)]
#[repr(C)]
pub struct ArcShape<T> {
    strong: core::sync::atomic::AtomicUsize,
    weak: core::sync::atomic::AtomicUsize,
    data: T,
}

/// An empty vector with room for `capacity` elements, or STATUS_INSUFFICIENT_RESOURCES: the
/// engine's one fallible allocation route (W6; stable Rust has no `Vec::try_with_capacity`).
/// Every mount-time table and buffer of a volume is made through it, so a failed allocation
/// fails the mount instead of stopping the machine. Asks the allocation-failure injection
/// first ([`faults::allocation_fails`]).
pub(crate) fn try_vec<T>(capacity: usize) -> Result<Vec<T>, Status> {
    if faults::allocation_fails() {
        return Err(Status::InsufficientResources);
    }
    let mut v = Vec::new();
    v.try_reserve_exact(capacity)
        .map_err(|_| Status::InsufficientResources)?;
    Ok(v)
}

/// Bytes held by one volume's engine buffers, by purpose (nonpaged pool in the kernel).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VolumeMemory {
    /// Direct write bounce buffers: one per direct request in flight, each the largest write
    /// segment the host takes; none unless direct writes are effective.
    pub direct_bounce: u64,
    /// The legacy queue's two alternating write fragment buffers; none on a read-only volume.
    pub legacy_fragments: u64,
    /// The legacy I/O thread's one-fragment read-ahead buffer.
    pub legacy_read_ahead: u64,
    /// The legacy I/O thread's buffer for caller buffers the host cannot take (unaligned);
    /// none when the host takes any address.
    pub legacy_unaligned: u64,
}

impl VolumeMemory {
    /// (name, bytes) pairs, for JSON and status output.
    pub fn fields(&self) -> [(&'static str, u64); 4] {
        [
            ("direct_bounce", self.direct_bounce),
            ("legacy_fragments", self.legacy_fragments),
            ("legacy_read_ahead", self.legacy_read_ahead),
            ("legacy_unaligned", self.legacy_unaligned),
        ]
    }

    /// Every purpose together.
    pub fn total(&self) -> u64 {
        self.fields().iter().map(|(_, v)| *v).sum()
    }
}

/// Which figure an allocation counts in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    DirectBounce,
    LegacyFragments,
    LegacyReadAhead,
    LegacyUnaligned,
}

/// The live figures of one volume (in its `PathContext`).
#[derive(Default)]
pub(crate) struct MemoryBook {
    held: [AtomicU64; 4],
}

impl MemoryBook {
    /// `bytes` more are held for `purpose`.
    pub(crate) fn add(&self, purpose: Purpose, bytes: usize) {
        self.held[purpose as usize].fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// A copy of the figures.
    pub(crate) fn snapshot(&self) -> VolumeMemory {
        let v = |p: Purpose| self.held[p as usize].load(Ordering::Relaxed);
        VolumeMemory {
            direct_bounce: v(Purpose::DirectBounce),
            legacy_fragments: v(Purpose::LegacyFragments),
            legacy_read_ahead: v(Purpose::LegacyReadAhead),
            legacy_unaligned: v(Purpose::LegacyUnaligned),
        }
    }
}
