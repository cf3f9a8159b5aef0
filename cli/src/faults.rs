//! Test-only switches that reintroduce a bug, so a test can show that its check catches it,
//! and test-only seams (the clock of the PRF notice).
//!
//! Compiled in only with the cargo feature `fault-switches`, which only test builds turn on
//! (the crate's dev-dependency on itself); a test switches one on for the vcctl it runs with
//! the environment variable `VCCTL_FAULTS` (names, comma-separated). Without the feature
//! every switch is a constant `false`, every seam `None`, and no variable is read.

/// A bug that can be switched back on in test builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// W15: `create` writes plain zeros where the data area's random fill belongs (free
    /// space and hidden area then stand out in the raw container bytes).
    FillWritesZeros,
}

impl Fault {
    /// The name `VCCTL_FAULTS` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Fault::FillWritesZeros => "fill-writes-zeros",
        }
    }
}

/// True when `fault` is switched on.
#[inline(always)]
pub fn is_on(fault: Fault) -> bool {
    #[cfg(feature = "fault-switches")]
    {
        std::env::var("VCCTL_FAULTS").is_ok_and(|v| v.split(',').any(|n| n.trim() == fault.name()))
    }
    #[cfg(not(feature = "fault-switches"))]
    {
        let _ = fault;
        false
    }
}

/// Test seam for the clock of the PRF notice (`volume::PrfNotice`): with the variable
/// `VCCTL_PRF_NOTICE_AFTER_MS`, an open names the PRFs it tries after that many milliseconds
/// instead of vcctl's 1.5 s (0: every PRF it starts).
pub fn prf_notice_after() -> Option<std::time::Duration> {
    #[cfg(feature = "fault-switches")]
    {
        std::env::var("VCCTL_PRF_NOTICE_AFTER_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(std::time::Duration::from_millis)
    }
    #[cfg(not(feature = "fault-switches"))]
    {
        None
    }
}
