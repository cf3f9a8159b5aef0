//! Test-only switches that reintroduce the bugs docs/review.md found, so the reliability harness
//! can prove it catches each one. Without the cargo feature `fault-switches` every switch is a
//! constant `false` and compiles away.

/// A bug from the review that can be switched back on in test builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Fault {
    /// R1: engine threads run upper completion code themselves.
    R1CompleteOnEngineThread = 1 << 0,
    /// R2: the key block flag is checked only before the first segment.
    R2CheckBlockOnce = 1 << 1,
    /// R3: erase zeroizes without waiting for in-flight crypto.
    R3SkipKeyRundown = 1 << 2,
    /// R12: a pending write blocks every later read (volume-wide barrier).
    R12VolumeWideBarrier = 1 << 3,
    /// R13: dismount returns without waiting for child requests.
    R13AbandonChildren = 1 << 4,
    /// Direct path: a worker waits for another host-operation permit while it holds some
    /// (8 workers each holding one then wait for each other forever).
    CapWaitWhileHolding = 1 << 5,
    /// W9: a path's thread waits (on an event already signalled, so it never blocks) while it
    /// holds its queue's spin lock: a wait at DISPATCH_LEVEL, a bugcheck on Windows, which the
    /// user-mode platforms' virtual IRQL must report with its site.
    W9WaitInsideLock = 1 << 6,
    /// Completion: a finishing thread queues its own work item whenever one is free, even
    /// while earlier requests wait at the completion thread for one (it overtakes them).
    CompletionOvertakes = 1 << 7,
    /// Direct path: a host flush that failed is reported to the upper flush as success (its
    /// writes may not be durable, and the caller is told they are).
    FlushErrorIgnored = 1 << 8,
    /// R12, direct path: a read issued on the dispatching thread does not look at the direct
    /// FIFO, so it overtakes the jobs queued there before it.
    R12DispatchOvertakes = 1 << 9,
    /// Direct path: the host's report finishes a request issued without a waiter even when
    /// the issuer has not parked it yet (its start has not returned): the request is lost.
    DetachedReportBeforePark = 1 << 10,
    /// W5: the volume key's cipher is built by value on the mounting thread's stack and then
    /// moved into its block, leaving a copy of the round keys on that stack.
    W5KeyScheduleByValue = 1 << 11,
    /// R3: erase forgets the cipher instead of dropping it, so its round keys are never
    /// zeroized (the erased flag is set all the same).
    R3EraseLeaksCipher = 1 << 12,
    /// W10: IOCTL_DISK_VERIFY is served the old way: its host range is read synchronously on
    /// the sender's thread (into a buffer allocated per call), not queued to a path's thread.
    VerifyOnCallerThread = 1 << 15,
    /// W10: any number of IOCTL_DISK_VERIFYs are admitted at once (a flood takes places in
    /// the range ordering and the paths' FIFOs ahead of the volume's reads and writes, and
    /// dismount serves them all), instead of one at a time.
    VerifyUnlimited = 1 << 20,
    /// W10: an IOCTL_DISK_VERIFY sent while another is in service is refused at once with
    /// STATUS_DEVICE_BUSY instead of waiting its turn (chkdsk /r and full format then record
    /// good sectors as bad).
    VerifyRefusedWhenBusy = 1 << 22,
}

#[cfg(feature = "fault-switches")]
mod switches {
    use core::sync::atomic::{AtomicU32, Ordering};
    static ON: AtomicU32 = AtomicU32::new(0);

    pub fn set(mask: u32) {
        ON.store(mask, Ordering::SeqCst);
    }
    pub fn is_on(bit: u32) -> bool {
        ON.load(Ordering::Relaxed) & bit != 0
    }
}

/// Turns exactly the listed faults on (an empty list turns all off).
#[cfg(feature = "fault-switches")]
pub fn set_faults(faults: &[Fault]) {
    switches::set(faults.iter().fold(0, |m, f| m | *f as u32));
}

/// True when `fault` is switched on.
#[inline(always)]
pub fn is_on(fault: Fault) -> bool {
    #[cfg(feature = "fault-switches")]
    {
        switches::is_on(fault as u32)
    }
    #[cfg(not(feature = "fault-switches"))]
    {
        let _ = fault;
        false
    }
}

pub(crate) fn skip_key_rundown() -> bool {
    is_on(Fault::R3SkipKeyRundown)
}

/// W6 allocation-failure injection: every fallible allocation of the engine and of the
/// user-mode platforms asks [`allocation_fails`] first; this makes the `n`-th one the calling
/// thread makes from now (1-based) fail, as a pool allocation returning NULL does (0: none
/// fails). Per thread, so tests and simulator seeds running side by side do not meet: a
/// mount's fallible allocations are all made on the mounting thread.
#[cfg(feature = "fault-switches")]
pub fn fail_allocation_at(n: u64) {
    alloc_faults::STATE.with(|s| s.set((0, n)));
}

/// Fallible allocations the calling thread asked since its last [`fail_allocation_at`].
#[cfg(feature = "fault-switches")]
pub fn allocations_seen() -> u64 {
    alloc_faults::STATE.with(|s| s.get().0)
}

/// Fallible allocations asked by any thread so far (to show that serving requests asks none).
#[cfg(feature = "fault-switches")]
pub fn allocations_seen_by_all() -> u64 {
    alloc_faults::ALL.load(core::sync::atomic::Ordering::SeqCst)
}

#[cfg(feature = "fault-switches")]
mod alloc_faults {
    use core::cell::Cell;
    use core::sync::atomic::AtomicU64;
    std::thread_local! {
        /// (asked so far, the one that fails).
        pub static STATE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }
    pub static ALL: AtomicU64 = AtomicU64::new(0);
}

/// Asked by every fallible allocation site before it allocates: true when the injection says
/// this one fails. Two injections can answer: the test switches above (feature
/// `fault-switches`, user mode) and the one a platform installed through the platform seam
/// ([`crate::platform::AllocationInjection`]: the kernel glue's Wine build); without either
/// it is a constant `false`.
#[inline(always)]
pub fn allocation_fails() -> bool {
    #[cfg(feature = "fault-switches")]
    {
        alloc_faults::ALL.fetch_add(1, core::sync::atomic::Ordering::SeqCst);
        let switched = alloc_faults::STATE.with(|s| {
            let (seen, fail_at) = s.get();
            s.set((seen + 1, fail_at));
            seen + 1 == fail_at
        });
        // Both are asked, so each counts every allocation whichever one fails it.
        let installed = crate::platform::installed_says_fail();
        switched || installed
    }
    #[cfg(not(feature = "fault-switches"))]
    {
        crate::platform::installed_says_fail()
    }
}
