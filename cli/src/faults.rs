//! Test-only switches that reintroduce a bug, so a test can show that its check catches it,
//! and test-only seams (the clock of the PRF notice, the memory Argon2id sees available).
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
    /// Argon2id starts without checking the memory the system can give (on Linux it would then
    /// be killed, not refused, when memory runs out).
    Argon2SkipsMemoryCheck,
    /// `create` accepts an Argon2 PIM below 12 with a password shorter than 20 bytes.
    Argon2AllowsShortPassword,
}

impl Fault {
    /// The name `VCCTL_FAULTS` gives it.
    pub fn name(self) -> &'static str {
        match self {
            Fault::FillWritesZeros => "fill-writes-zeros",
            Fault::Argon2SkipsMemoryCheck => "argon2-skips-memory-check",
            Fault::Argon2AllowsShortPassword => "argon2-allows-short-password",
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

/// Test seam for the memory Argon2id checks before it starts (`kdf::argon2id`): with the
/// variable `VCCTL_MEMORY_AVAILABLE_MIB`, the system is taken to have that many MiB available.
pub fn memory_available_mib() -> Option<u64> {
    #[cfg(feature = "fault-switches")]
    {
        std::env::var("VCCTL_MEMORY_AVAILABLE_MIB")
            .ok()
            .and_then(|v| v.parse().ok())
    }
    #[cfg(not(feature = "fault-switches"))]
    {
        None
    }
}
