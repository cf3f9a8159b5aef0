//! The security context each user-mode thread runs in, as the kernel keeps it per thread
//! (docs/review.md R11): its own (the process's primary token), or impersonating a client.
//!
//! Owns: the per-thread context and kind (thread-locals of the std platform, shuttle
//! thread-locals in the simulator), what the engine's threads that issue host I/O run in (the
//! mounting user's, set when they start), and [`as_mounting_user`]: which dispatching threads
//! may be lent that context, and the save, impersonate and exact restore around a host read
//! such a thread issues itself, the user-mode half of the kernel glue's
//! PsDisableImpersonation / SeImpersonateClientEx / PsRevertToSelf / PsRestoreImpersonation
//! (`driver/src/wdm/platform.rs`).
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

/// What kind of thread it is, for whether the engine may lend it the mounting user's context
/// (the kernel glue's rule, `driver/src/wdm/platform.rs`): only a thread of the System process
/// (the engine's threads, system work items, a file system's or server's workers), whatever it
/// impersonates (saved and restored exactly). An application's thread never is: another of its
/// process's threads could impersonate it while it impersonates the mounting user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// A thread of the System process.
    System,
    /// A thread of an application's process (the default of a harness thread).
    Process,
}

std::thread_local! {
    static CONTEXT: Cell<Context> = const { Cell::new(Context::Own) };
    /// Harness threads stand for an application's threads by default.
    static CALLER: Cell<Caller> = const { Cell::new(Caller::Process) };
}

shuttle::thread_local! {
    static SIM_CONTEXT: Cell<Context> = const { Cell::new(Context::Own) };
    static SIM_CALLER: Cell<Caller> = const { Cell::new(Caller::Process) };
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

/// The calling thread's kind.
pub fn caller() -> Caller {
    if simulated() {
        SIM_CALLER.with(Cell::get)
    } else {
        CALLER.with(Cell::get)
    }
}

/// Sets the calling thread's kind (the engine's threads and work items are system threads).
pub fn set_caller(caller: Caller) {
    if simulated() {
        SIM_CALLER.with(|c| c.set(caller));
    } else {
        CALLER.with(|c| c.set(caller));
    }
}

/// Runs `issue` impersonating the mounting user and restores exactly the context the thread
/// had before, whatever it was (never "no impersonation" for a thread that impersonated);
/// `None` (nothing ran, nothing changed) for a thread the kernel's rule does not lend it to.
pub fn as_mounting_user<R>(issue: impl FnOnce() -> R) -> Option<R> {
    struct Restore(Context);
    impl Drop for Restore {
        fn drop(&mut self) {
            set(self.0);
        }
    }
    if caller() != Caller::System {
        return None;
    }
    let _restore = Restore(current());
    set(Context::MountingUser);
    Some(issue())
}
