//! The security context each user-mode thread runs in, as the kernel keeps it per thread
//! (docs/review.md R11): its own (the process's primary token), or impersonating a client.
//!
//! Owns: the per-thread context (a thread-local of the std platform, a shuttle thread-local in
//! the simulator), what the engine's threads that issue host I/O run in (the mounting user's,
//! set when they start), and [`as_mounting_user`]: the dispatching thread's save, impersonate
//! and exact restore around a host read it issues itself, the user-mode half of the kernel
//! glue's PsDisableImpersonation / SeImpersonateClientEx / PsRevertToSelf /
//! PsRestoreImpersonation (`driver/src/wdm/platform.rs`).
//! Never: checks access; hosts only record what they saw ([`current`]).

use std::cell::Cell;

/// A thread's security context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// The thread's own: no impersonation.
    Own,
    /// Impersonating a client (its token's id and impersonation level, as saved and restored).
    Client {
        /// The client token's id.
        token: u32,
        /// Its impersonation level (SecurityIdentification 1 .. SecurityDelegation 3).
        level: u8,
        /// Effective-only.
        effective_only: bool,
    },
    /// Impersonating the user who mounted the volume (the engine's host I/O).
    MountingUser,
}

std::thread_local! {
    static CONTEXT: Cell<Context> = const { Cell::new(Context::Own) };
}

shuttle::thread_local! {
    static SIM_CONTEXT: Cell<Context> = const { Cell::new(Context::Own) };
}

fn simulated() -> bool {
    crate::irql::mode() == crate::irql::Mode::Sim && !std::thread::panicking()
}

/// The calling thread's context.
pub fn current() -> Context {
    if simulated() {
        SIM_CONTEXT.with(Cell::get)
    } else {
        CONTEXT.with(Cell::get)
    }
}

/// Sets the calling thread's context (a test's client impersonation; an engine thread's start).
pub fn set(context: Context) {
    if simulated() {
        SIM_CONTEXT.with(|c| c.set(context));
    } else {
        CONTEXT.with(|c| c.set(context));
    }
}

/// Runs `issue` impersonating the mounting user and restores exactly the context the thread
/// had before, whatever it was (never "no impersonation" for a thread that impersonated).
pub fn as_mounting_user<R>(issue: impl FnOnce() -> R) -> R {
    struct Restore(Context);
    impl Drop for Restore {
        fn drop(&mut self) {
            set(self.0);
        }
    }
    let _restore = Restore(current());
    set(Context::MountingUser);
    issue()
}
