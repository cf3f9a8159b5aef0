//! IRQL contracts, checked without Windows (docs/review.md W9).
//!
//! Owns: the interrupt request levels the engine and the glue care about, the one table of
//! which call may run at which level ([`Call::max`]), and [`VirtualIrql`], the per-thread
//! bookkeeping that the user-mode platforms (std host, simulator) and the Wine build of the
//! glue keep: raised inside spin locks, completion routines, the cancel routine and read/write
//! dispatch; checked by every wrapper whose Windows contract has a maximum level.
//! Never: stores the level itself. Where the per-thread state lives is the platform's business
//! (a thread-local in user mode, a table keyed by thread in the Wine build); on real Windows
//! the processor keeps the IRQL and nothing here runs.
//!
//! On Windows a wait at DISPATCH_LEVEL is a bugcheck (IRQL_NOT_LESS_OR_EQUAL or
//! ATTEMPTED_SWITCH_FROM_DPC); here it is a [`Violation`] naming the call and its site.

use core::fmt;
use core::panic::Location;

/// An interrupt request level, as far as this driver runs (it never runs above DISPATCH).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Irql {
    /// PASSIVE_LEVEL (0): threads, waits, Zw* calls, paged memory.
    Passive = 0,
    /// APC_LEVEL (1): inside a guarded region or a fast mutex.
    Apc = 1,
    /// DISPATCH_LEVEL (2): spin locks, completion and cancel routines, DPCs, and read/write
    /// dispatch when the caller above us runs there.
    Dispatch = 2,
}

impl Irql {
    /// The name Windows uses.
    pub const fn name(self) -> &'static str {
        match self {
            Irql::Passive => "PASSIVE_LEVEL",
            Irql::Apc => "APC_LEVEL",
            Irql::Dispatch => "DISPATCH_LEVEL",
        }
    }
}

/// A call whose Windows contract has a maximum IRQL. One row per kind of call; each wrapper in
/// every platform checks its row, so the table is the single statement of the contracts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// Waiting on an event, semaphore, mutex or timer with a non-zero timeout
    /// (KeWaitForSingleObject, KeDelayExecutionThread): PASSIVE or APC.
    Wait,
    /// Joining a thread (waits on the thread object).
    JoinThread,
    /// IoReleaseRemoveLockAndWait: PASSIVE (the WDK's contract; stricter than [`Call::Wait`]).
    RemoveLockWait,
    /// Starting a system thread (PsCreateSystemThread).
    SpawnThread,
    /// A Zw* call (ZwCreateFile, ZwReadFile, ZwWriteFile, ZwFsControlFile, ZwClose...).
    ZwCall,
    /// Synchronous host I/O: builds a request and waits for it.
    HostSyncIo,
    /// Mapping an MDL into system space (MmGetSystemAddressForMdlSafe). Not the WDK contract
    /// (that is IRQL <= DISPATCH_LEVEL): PASSIVE is this engine's policy (docs/review.md W7:
    /// upper buffers are mapped only on the engine's own threads, never in dispatch), and the
    /// report names it so.
    MapMdl,
    /// Building or allocating an IRP or MDL (IoAllocateIrp, IoBuildPartialMdl...): DISPATCH.
    BuildIrp,
    /// Sending an IRP down (IoCallDriver): DISPATCH.
    CallDriver,
    /// Reading the registry (ZwOpenKey, ZwQueryValueKey).
    RegistryRead,
    /// Allocating or freeing paged pool: APC.
    PagedPool,
    /// Allocating or freeing nonpaged pool: DISPATCH.
    NonPagedPool,
    /// Queueing a work item (IoQueueWorkItem): DISPATCH.
    QueueWorkItem,
    /// Setting an event or releasing a semaphore without waiting: DISPATCH.
    Signal,
    /// Taking a semaphore permit only if one is free (KeWaitForSingleObject with a zero
    /// timeout, which never blocks): DISPATCH. The completion stage's finishing thread.
    TryAcquire,
    /// Completing an upper request (IoCompleteRequest): DISPATCH.
    CompleteRequest,
    /// Acquiring a spin lock (KeAcquireSpinLock*): DISPATCH.
    AcquireSpinLock,
}

impl Call {
    /// The highest level at which the call is allowed.
    pub const fn max(self) -> Irql {
        match self {
            Call::Wait | Call::JoinThread | Call::PagedPool => Irql::Apc,
            Call::SpawnThread
            | Call::ZwCall
            | Call::HostSyncIo
            | Call::MapMdl
            | Call::RemoveLockWait
            | Call::RegistryRead => Irql::Passive,
            Call::BuildIrp
            | Call::CallDriver
            | Call::NonPagedPool
            | Call::QueueWorkItem
            | Call::Signal
            | Call::TryAcquire
            | Call::CompleteRequest
            | Call::AcquireSpinLock => Irql::Dispatch,
        }
    }

    /// A short name for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Call::Wait => "wait",
            Call::JoinThread => "thread join",
            Call::SpawnThread => "thread start",
            Call::ZwCall => "Zw* call",
            Call::HostSyncIo => "synchronous host I/O",
            Call::MapMdl => "MDL mapping (engine policy W7)",
            Call::RemoveLockWait => "remove-lock release-and-wait",
            Call::BuildIrp => "IRP/MDL building",
            Call::CallDriver => "IoCallDriver",
            Call::RegistryRead => "registry read",
            Call::PagedPool => "paged pool",
            Call::NonPagedPool => "nonpaged pool",
            Call::QueueWorkItem => "IoQueueWorkItem",
            Call::Signal => "event set / semaphore release",
            Call::TryAcquire => "semaphore take without waiting",
            Call::CompleteRequest => "IoCompleteRequest",
            Call::AcquireSpinLock => "spin lock acquire",
        }
    }
}

/// Why a virtual IRQL check failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Breach {
    /// A call ran above its maximum level.
    TooHigh {
        /// The call.
        call: Call,
        /// The level the thread was at.
        at: Irql,
    },
    /// A raise to a level below the current one (KeRaiseIrql's own contract).
    RaiseBelowCurrent {
        /// The level the thread was at.
        at: Irql,
        /// The level asked for.
        to: Irql,
    },
    /// A lower to a level above the current one, or a lower with no raise to undo.
    UnbalancedLower {
        /// The level the thread was at.
        at: Irql,
        /// The level asked for.
        to: Irql,
    },
    /// A thread returned to the system (thread exit, work item end, dispatch return) above
    /// the level it was entered at.
    LeftRaised {
        /// The level the thread was at.
        at: Irql,
        /// The level it should have been at.
        expected: Irql,
    },
}

/// A broken IRQL contract and where it was broken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Violation {
    /// What was broken.
    pub breach: Breach,
    /// The caller of the checking wrapper (`#[track_caller]`).
    pub site: &'static Location<'static>,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("W9 violation: ")?;
        match self.breach {
            Breach::TooHigh { call, at } => write!(
                f,
                "{} at {} (allowed up to {})",
                call.name(),
                at.name(),
                call.max().name()
            )?,
            Breach::RaiseBelowCurrent { at, to } => {
                write!(f, "raise from {} to lower {}", at.name(), to.name())?
            }
            Breach::UnbalancedLower { at, to } => {
                write!(f, "lower from {} to higher {}", at.name(), to.name())?
            }
            Breach::LeftRaised { at, expected } => write!(
                f,
                "returned at {} (entered at {})",
                at.name(),
                expected.name()
            )?,
        }
        write!(
            f,
            " at {}:{}:{}",
            self.site.file(),
            self.site.line(),
            self.site.column()
        )
    }
}

/// One thread's virtual IRQL. Raises and lowers nest like KeRaiseIrql/KeLowerIrql: a raise
/// returns the previous level, which the matching lower restores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VirtualIrql {
    level: Irql,
}

impl Default for VirtualIrql {
    fn default() -> Self {
        Self::new()
    }
}

impl VirtualIrql {
    /// A thread at PASSIVE_LEVEL (every thread starts there).
    pub const fn new() -> Self {
        Self {
            level: Irql::Passive,
        }
    }

    /// The current level.
    pub const fn level(&self) -> Irql {
        self.level
    }

    /// Raises to `to` and returns the level to restore. Raising to the current level is
    /// allowed (KeAcquireSpinLock at DISPATCH does it).
    #[track_caller]
    pub fn raise(&mut self, to: Irql) -> Result<Irql, Violation> {
        let previous = self.level;
        if to < previous {
            return Err(Violation {
                breach: Breach::RaiseBelowCurrent { at: previous, to },
                site: Location::caller(),
            });
        }
        self.level = to;
        Ok(previous)
    }

    /// Lowers to `to`, the value a matching [`raise`](Self::raise) returned.
    #[track_caller]
    pub fn lower(&mut self, to: Irql) -> Result<(), Violation> {
        if to > self.level {
            return Err(Violation {
                breach: Breach::UnbalancedLower { at: self.level, to },
                site: Location::caller(),
            });
        }
        self.level = to;
        Ok(())
    }

    /// Checks that `call` may run at the current level.
    #[track_caller]
    pub fn check(&self, call: Call) -> Result<(), Violation> {
        if self.level > call.max() {
            return Err(Violation {
                breach: Breach::TooHigh {
                    call,
                    at: self.level,
                },
                site: Location::caller(),
            });
        }
        Ok(())
    }

    /// Checks that the thread is back at `expected` as it returns to the system.
    #[track_caller]
    pub fn check_returned_at(&self, expected: Irql) -> Result<(), Violation> {
        if self.level != expected {
            return Err(Violation {
                breach: Breach::LeftRaised {
                    at: self.level,
                    expected,
                },
                site: Location::caller(),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::ToString;

    #[test]
    fn w9_a_wait_inside_a_spin_lock_is_a_violation_naming_its_site() {
        let mut irql = VirtualIrql::new();
        assert!(irql.check(Call::Wait).is_ok());
        let previous = irql.raise(Irql::Dispatch).unwrap();
        let line = line!() + 1;
        let err = irql.check(Call::Wait).unwrap_err();
        assert_eq!(
            err.breach,
            Breach::TooHigh {
                call: Call::Wait,
                at: Irql::Dispatch
            }
        );
        let text = err.to_string();
        assert!(
            text.starts_with("W9 violation: wait at DISPATCH_LEVEL"),
            "{text}"
        );
        assert!(text.contains(&std::format!("irql.rs:{line}:")), "{text}");
        // Calls allowed at DISPATCH stay allowed.
        for call in [Call::Signal, Call::BuildIrp, Call::CompleteRequest] {
            assert!(irql.check(call).is_ok(), "{call:?}");
        }
        irql.lower(previous).unwrap();
        assert!(irql.check(Call::ZwCall).is_ok());
        assert!(irql.check_returned_at(Irql::Passive).is_ok());
    }

    #[test]
    fn w9_raises_nest_and_unbalanced_lowers_are_violations() {
        let mut irql = VirtualIrql::new();
        let p0 = irql.raise(Irql::Apc).unwrap();
        let p1 = irql.raise(Irql::Dispatch).unwrap();
        // A spin lock taken at DISPATCH raises to DISPATCH again.
        let p2 = irql.raise(Irql::Dispatch).unwrap();
        assert_eq!((p0, p1, p2), (Irql::Passive, Irql::Apc, Irql::Dispatch));
        assert!(matches!(
            irql.raise(Irql::Passive).unwrap_err().breach,
            Breach::RaiseBelowCurrent { .. }
        ));
        irql.lower(p2).unwrap();
        irql.lower(p1).unwrap();
        assert!(matches!(
            irql.check_returned_at(Irql::Passive).unwrap_err().breach,
            Breach::LeftRaised { at: Irql::Apc, .. }
        ));
        assert!(matches!(
            irql.lower(Irql::Dispatch).unwrap_err().breach,
            Breach::UnbalancedLower { .. }
        ));
        irql.lower(p0).unwrap();
        assert_eq!(irql.level(), Irql::Passive);
    }

    #[test]
    fn w9_the_table_matches_the_wdk_contracts() {
        // Rows that differ from "DISPATCH is fine" are the ones that catch bugchecks.
        assert_eq!(Call::Wait.max(), Irql::Apc);
        assert_eq!(Call::ZwCall.max(), Irql::Passive);
        assert_eq!(Call::RegistryRead.max(), Irql::Passive);
        assert_eq!(Call::PagedPool.max(), Irql::Apc);
        // IoReleaseRemoveLockAndWait is PASSIVE, unlike a plain wait (APC allowed).
        assert_eq!(Call::RemoveLockWait.max(), Irql::Passive);
        assert!(Call::RemoveLockWait.max() < Call::Wait.max());
        // MDL mapping: the engine's W7 policy (PASSIVE), stricter than the WDK's DISPATCH,
        // and the report says it is a policy.
        assert_eq!(Call::MapMdl.max(), Irql::Passive);
        assert!(Call::MapMdl.name().contains("policy"));
        assert_eq!(Call::CompleteRequest.max(), Irql::Dispatch);
        assert_eq!(Call::AcquireSpinLock.max(), Irql::Dispatch);
    }
}
