//! Allocation-failure injection handed to the engine by a platform (W6).
//!
//! Owns: the one place a platform's own injection is installed, and the question every
//! fallible allocation of the engine asks through [`crate::faults::allocation_fails`].
//! Never: decides which allocation fails; that is the installed injection's rule.
//!
//! The kernel glue's Wine build counts a mount's allocations on the mounting thread and fails
//! the n-th (`wdm::pool::injection`); it installs that rule here at DriverEntry, so the engine
//! asks it without naming the glue. Product images are built without the feature and ask
//! nothing: no hook, no indirect call.

#[cfg(feature = "allocation-injection")]
use once_cell::race::OnceRef;

/// A platform's rule for which fallible allocation fails.
pub trait AllocationInjection: Sync {
    /// True when the fallible allocation being asked for now must fail, as a pool allocation
    /// that returns NULL.
    fn fails(&self) -> bool;
}

#[cfg(feature = "allocation-injection")]
static INSTALLED: OnceRef<'static, &'static dyn AllocationInjection> = OnceRef::new();

/// Installs `injection` for the life of this loaded image (a process, or a driver image until
/// it unloads). The first one installed stays: a second call returns `false` and changes
/// nothing.
#[cfg(feature = "allocation-injection")]
pub fn install_allocation_injection(injection: &'static &'static dyn AllocationInjection) -> bool {
    INSTALLED.set(injection).is_ok()
}

/// What the installed injection says of the allocation being asked for now (`false` when
/// none is installed). Never inlined: its one indirect call stays in this one function, which
/// the image checker knows reaches only `AllocationInjection::fails` (W13's call graph).
#[cfg(feature = "allocation-injection")]
#[inline(never)]
pub(crate) fn installed_says_fail() -> bool {
    INSTALLED.get().is_some_and(|injection| injection.fails())
}

/// Without the feature nothing can be installed: nothing fails.
#[cfg(not(feature = "allocation-injection"))]
#[inline(always)]
pub(crate) fn installed_says_fail() -> bool {
    false
}
