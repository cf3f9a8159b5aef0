//! Test-only switches that reintroduce the bugs docs/review.md found, so the reliability harness
//! can prove it catches each one. Without the cargo feature `fault-switches` every switch is a
//! constant `false` and compiles away, but for one: the Wine build (feature `wine-host`) can turn
//! on `W5KeyCopyOnMountStack` from a registry value (`wine_host` below), so the Wine end to end
//! shows its memory check bites. Product images have neither feature, and no switch at all.

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
    /// R3: the cipher's block is released without the wipe that precedes its release (only
    /// the schedule's own zeroizing drop, after the platform's watch looked, clears it).
    R3ReleaseUnwiped = 1 << 13,
    /// R3: the volume cipher's wipe covers its AES stage only: the other ciphers' schedules of
    /// a cascade or a non-AES volume stay in their blocks until those are freed.
    R3CascadeStagesUnwiped = 1 << 14,
    /// W10: IOCTL_DISK_VERIFY is served the old way: its host range is read synchronously on
    /// the sender's thread (into a buffer allocated per call), not queued to a path's thread.
    VerifyOnCallerThread = 1 << 15,
    /// W1: the forced dismount of every volume goes highest id first, whatever lives on what
    /// (a volume whose host is a file on another may lose its host first).
    W1ForcedOrderById = 1 << 16,
    /// R13: the control path waits on a stalled host: a mount opens and probes its host
    /// holding the control mutex, and shutdown waits for its dismount thread without bound.
    ControlPathHeldByHost = 1 << 17,
    /// W5, kernel glue: the mount keeps a by-value copy of the volume's cipher (both round-key
    /// schedules) in its own frame and never wipes it, as the old code's by-value request and
    /// cipher left them on the mounting thread's stack (the Wine memory check must find it).
    W5KeyCopyOnMountStack = 1 << 18,
    /// Crypto: a cascade decrypts with its ciphers in encryption order (first to last)
    /// instead of last to first, as VeraCrypt does.
    CascadeDecryptForward = 1 << 19,
    /// W10: any number of IOCTL_DISK_VERIFYs are admitted at once (a flood takes places in
    /// the range ordering and the paths' FIFOs ahead of the volume's reads and writes, and
    /// dismount serves them all), instead of one at a time.
    VerifyUnlimited = 1 << 20,
    /// W1: when no free volume qualifies, the forced dismount of every volume starts the
    /// highest id among free hosts even while a volume on one of them is still dismounting
    /// (three levels: C on A on B; A started while C runs), and a host starts while a volume
    /// that left the table still closes its host file on it.
    W1HostStartedWhileNestedRuns = 1 << 21,
    /// W10: an IOCTL_DISK_VERIFY sent while another is in service is refused at once with
    /// STATUS_DEVICE_BUSY instead of waiting its turn (chkdsk /r and full format then record
    /// good sectors as bad).
    VerifyRefusedWhenBusy = 1 << 22,
    /// Mount ABI: the request of an AES mount is built in the extended layout (algorithm
    /// and 192-byte key area) instead of the first one, which a driver older than the
    /// extension refuses by its size.
    AbiAesRequestExtended = 1 << 23,
    /// W10, the VERIFYs' line: a request popped from a keyed list (the hand-over of the next
    /// VERIFY, dismount's refusal) keeps its in-line flag, so a cancel that comes late finds
    /// the flag set on a request no longer in the line and unlinks it (in the kernel: through
    /// stale list links, a corrupted line and a second owner of the IRP). Applied by the
    /// engine's list algorithm (`platform::LinkedRequests::pop_front`), whose neighbour check
    /// stops the stale unlink.
    VerifyCancelStaleFlag = 1 << 24,
    /// R3: a mount claimed before erase-keys may publish after it: its publish does not
    /// compare the erase generation of its claim with the current one.
    R3EraseGenerationIgnored = 1 << 25,
    /// W1: the dismount sequence drops its reference to the volume device without waiting
    /// until it is the last: a status IOCTL holding another deletes the device later, in its
    /// own thread, after the handle's close and the dismount's completion.
    W1DeleteBeforeLastReference = 1 << 26,
    /// W1: a mount whose host is a file on another of our volumes is not counted by that
    /// volume between its open's return and its publish or undo: shutdown's forced dismount
    /// may start the host's volume while a mount it refused at its publish still holds its
    /// host file open there.
    W1RefusedMountHostUncounted = 1 << 27,
    /// W5: the portable AES path (a CPU without AES instructions) keys its `aes` schedules
    /// by value and leaves the stack they were built on unwiped afterwards.
    W5PortableKeysUnburnt = 1 << 28,
    /// Direct path: a completion work item that carries a host permit and finds no job it may
    /// issue returns without giving the permit back (the cap shrinks for good).
    CarriedPermitLost = 1 << 29,
    /// A request queue's non-blocking taker (the carried permit's work item) that finds the
    /// head not for it keeps the queue permit it took instead of releasing it: a consumer
    /// then waits for the last request or stop forever.
    CarriedCountKept = 1 << 30,
    /// Direct path: a carried host permit is used (or carried) even while a worker in the
    /// middle of a request waits for one (such a worker can be starved, docs/review.md R12).
    CarriedPassesWaiter = 1 << 31,
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
    #[cfg(all(not(feature = "fault-switches"), feature = "wine-host"))]
    {
        wine_host::is_on(fault)
    }
    #[cfg(all(not(feature = "fault-switches"), not(feature = "wine-host")))]
    {
        let _ = fault;
        false
    }
}

/// The engine's switches the kernel glue's Wine build may turn on (from a registry value read
/// in DriverEntry), so the Wine end to end can show its own checks bite; every other one stays
/// a constant `false` there, and product images have none.
#[cfg(feature = "wine-host")]
pub mod wine_host {
    use super::Fault;
    use core::sync::atomic::{AtomicU32, Ordering};

    /// The switches the Wine build may turn on: W5's copy of the cipher left on the mounting
    /// thread's stack (`VcdirectWineFaultKeyCopyOnStack`, the w5-wine-key-bytes checks).
    pub const SWITCHABLE: u32 = Fault::W5KeyCopyOnMountStack as u32;

    static ON: AtomicU32 = AtomicU32::new(0);

    /// Turns `fault` on if the Wine build may switch it; false if it may not.
    pub fn turn_on(fault: Fault) -> bool {
        let bit = fault as u32 & SWITCHABLE;
        ON.fetch_or(bit, Ordering::Relaxed);
        bit != 0
    }

    /// True when `fault` is switchable and on (a constant `false` for the others).
    #[inline(always)]
    pub fn is_on(fault: Fault) -> bool {
        fault as u32 & SWITCHABLE != 0 && ON.load(Ordering::Relaxed) & fault as u32 != 0
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
