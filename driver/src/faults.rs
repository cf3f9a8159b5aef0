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
