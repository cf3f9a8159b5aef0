//! Engine-owned transfer buffers (direct write bounce buffers, legacy fragment and read-ahead
//! buffers) whose usable window starts at an address the host accepts: a plain heap
//! allocation is only 16-byte aligned, which a raw device or an unbuffered file refuses.
//! Zeroized when dropped: they hold plaintext or ciphertext of the volume.

use alloc::vec::Vec;
use zeroize::Zeroize;

use super::memory::{MemoryBook, Purpose};
use crate::platform::HostLimits;
use crate::Status;

/// A buffer of `capacity` bytes starting at an address aligned for the host.
pub(crate) struct AlignedBuffer {
    storage: Vec<u8>,
    start: usize,
    capacity: usize,
}

impl AlignedBuffer {
    /// Alignment that satisfies `limits`: the page size or the host's mask, whichever is larger.
    pub(crate) fn alignment_for(limits: &HostLimits) -> usize {
        let page = limits.page_size.max(4096) as usize;
        page.max((limits.alignment_mask as usize).saturating_add(1))
            .next_power_of_two()
    }

    /// `capacity` zero bytes aligned for `limits`, allocated now (fallibly: W6) and counted in
    /// `book` for `purpose` (the volume's memory report).
    pub(crate) fn new(
        capacity: usize,
        limits: &HostLimits,
        book: &MemoryBook,
        purpose: Purpose,
    ) -> Result<Self, Status> {
        let align = Self::alignment_for(limits);
        let len = capacity
            .checked_add(align)
            .ok_or(Status::InsufficientResources)?;
        let mut storage = super::try_vec(len)?;
        storage.resize(len, 0);
        book.add(purpose, storage.len());
        let start = storage.as_ptr().align_offset(align).min(align);
        Ok(AlignedBuffer {
            storage,
            start,
            capacity,
        })
    }

    /// Usable bytes.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The first `len` bytes of the aligned window.
    pub(crate) fn window(&mut self, len: usize) -> &mut [u8] {
        // Invariant, not input: every caller's length is bounded by what the buffer was sized
        // for at mount (a segment or fragment is at most that size).
        assert!(len <= self.capacity, "window within the buffer");
        &mut self.storage[self.start..self.start + len]
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        self.storage.zeroize();
    }
}
