//! The virtual IRQL of the wine-host build (docs/review.md W9), and its IRP and remove-lock
//! lifecycle checks.
//!
//! Owns: where each kernel thread's virtual level lives in the Wine build (a fixed table keyed
//! by `KeGetCurrentThread()`), raising it where Windows runs the glue at DISPATCH_LEVEL (spin
//! locks, completion routines, the cancel routine, read/write dispatch), checking it in every
//! wrapper whose contract has a maximum level ([`check`], with the row of
//! `crate::platform::irql::Call`), and reporting a broken contract as one DbgPrint line
//! `vcdirect: W9 violation: ...` naming the call site, counted, never a bugcheck.
//! Never: decides the contracts (`platform::irql` is the one table) or checks anything in the
//! product build: there every function here is an empty `#[inline(always)]` one and
//! [`Raised`] is a zero-sized value without `Drop`, so the product image is unchanged (the
//! processor keeps the real IRQL, and Driver Verifier checks it).
//!
//! Why a table and not the IRQL Wine reports: Wine runs drivers in a user-mode process; its
//! KeGetCurrentIrql always answers PASSIVE_LEVEL and its KeAcquireSpinLockRaiseToDpc and
//! KeRaiseIrql record nothing per thread, so a wait inside a spin lock is green there. The
//! table (`platform::irql_table`, unit-tested on the host) needs no import beyond
//! KeGetCurrentThread (already imported; Wine caches one KTHREAD object per thread in its TEB,
//! so the key is stable and distinct per thread: the request thread's is the object of the
//! first client thread it served, which no other thread of the process gets), allocates nothing
//! and takes no lock.

#[cfg(feature = "wine-host")]
pub(crate) use wine::*;

#[cfg(not(feature = "wine-host"))]
pub(crate) use product::*;

/// Product build: nothing is kept or checked (the real IRQL is the processor's).
#[cfg(not(feature = "wine-host"))]
mod product {
    use crate::platform::irql::{Call, Irql};

    /// Product build: no virtual level (zero-sized, no `Drop`).
    pub(crate) struct Raised;

    impl Raised {
        /// Product build: nothing to raise.
        #[inline(always)]
        pub(crate) fn to_dispatch() -> Raised {
            Raised
        }
    }

    /// Product build: no check.
    #[inline(always)]
    pub(crate) fn check(_call: Call) {}

    /// Product build: no check.
    #[inline(always)]
    pub(crate) fn check_returned_at(_expected: Irql) {}
}

#[cfg(feature = "wine-host")]
mod wine {
    use core::panic::Location;
    use core::sync::atomic::{AtomicU32, Ordering};

    use wdk_sys::ntddk::DbgPrint;

    use super::super::thread::current_thread;
    use crate::platform::irql::{Breach, Call, Irql, Violation, VirtualIrql};
    use crate::platform::irql_table::IrqlTable;

    /// Threads that may be above PASSIVE_LEVEL at the same time (an entry only while raised,
    /// `platform::irql_table`): the engine's threads of a few mounts plus Wine's dispatch and
    /// work-item threads stay far below it. A full table is reported as a violation (the run
    /// fails; nothing is checked wrongly).
    const SLOTS: usize = 256;
    /// The raised threads, keyed by their KTHREAD address.
    static TABLE: IrqlTable<SLOTS> = IrqlTable::new();
    /// Violations reported since load (the unload summary prints it).
    static VIOLATIONS: AtomicU32 = AtomicU32::new(0);
    /// Checks made since load (the unload summary prints it: the checks did run).
    static CHECKS: AtomicU32 = AtomicU32::new(0);

    /// The calling thread's key (its KTHREAD address; 0 if it had none, which Wine 8.0 never
    /// returns: such a thread is then not tracked rather than tracked wrongly) and its level.
    fn current() -> (usize, VirtualIrql) {
        let key = current_thread() as usize;
        let mut irql = VirtualIrql::new();
        // Raising a fresh PASSIVE_LEVEL value to a recorded level cannot fail.
        let _ = irql.raise(TABLE.level(key));
        (key, irql)
    }

    /// Records `level` for the calling thread `key`.
    #[track_caller]
    fn store(key: usize, level: Irql) {
        if TABLE.set(key, level).is_err() {
            report_rule(
                "virtual IRQL table full (more than 256 threads raised at once)",
                Location::caller(),
            );
        }
    }

    /// The calling thread at DISPATCH_LEVEL until the value drops (then back to the level it
    /// had). Held by the spin lock guard, the completion and cancel routines, and read/write
    /// dispatch of the Wine build.
    pub(crate) struct Raised {
        previous: Irql,
    }

    impl Raised {
        /// Raises the calling thread's virtual IRQL to DISPATCH_LEVEL.
        #[track_caller]
        pub(crate) fn to_dispatch() -> Raised {
            let (key, mut irql) = current();
            let previous = match irql.raise(Irql::Dispatch) {
                Ok(previous) => previous,
                Err(violation) => {
                    report(&violation);
                    irql.level()
                }
            };
            store(key, irql.level());
            Raised { previous }
        }
    }

    impl Drop for Raised {
        fn drop(&mut self) {
            let (key, mut irql) = current();
            if let Err(violation) = irql.lower(self.previous) {
                report(&violation);
            }
            store(key, irql.level());
        }
    }

    /// Checks that `call` may run at the calling thread's virtual IRQL; reports the caller's
    /// site otherwise (and the call goes on: the Wine build reports, it never bugchecks).
    #[track_caller]
    pub(crate) fn check(call: Call) {
        CHECKS.fetch_add(1, Ordering::Relaxed);
        let (_, irql) = current();
        if let Err(violation) = irql.check(call) {
            report(&violation);
        }
    }

    /// Checks that the calling thread returns to the system (thread exit, work item end) at
    /// `expected`.
    #[track_caller]
    pub(crate) fn check_returned_at(expected: Irql) {
        CHECKS.fetch_add(1, Ordering::Relaxed);
        let (key, irql) = current();
        if let Err(violation) = irql.check_returned_at(expected) {
            report(&violation);
            // The thread goes back to the system: drop its entry so that a later thread
            // with the same KTHREAD address does not inherit the level.
            store(key, Irql::Passive);
        }
    }

    /// Reports a lifecycle rule of the Wine build broken at the caller's site (an IRP
    /// touched after completion, a remove lock not drained), in the form of a violation line.
    #[track_caller]
    pub(crate) fn report_lifecycle(what: &'static str) {
        report_rule(what, Location::caller());
    }

    /// Counts a violation and prints `vcdirect: ` and its text, which is `Violation`'s Display
    /// (`W9 violation: <call> at <level> (allowed up to <level>) at <file>:<line>:<col>`, and
    /// its other three forms) written out as DbgPrint formats: no `core::fmt`, whose
    /// formatter's indirect calls the image's stack-budget check cannot bound (it would add
    /// every vtable target to every path that can report). Cold and out of line. DbgPrint
    /// without %wZ is callable at any IRQL up to DIRQL.
    #[cold]
    #[inline(never)]
    fn report(violation: &Violation) {
        VIOLATIONS.fetch_add(1, Ordering::Relaxed);
        let site = violation.site;
        let (file, line, column) = (site.file(), site.line(), site.column());
        let (a, b, c) = match violation.breach {
            Breach::TooHigh { call, at } => (call.name(), at.name(), call.max().name()),
            Breach::RaiseBelowCurrent { at, to } => (at.name(), to.name(), ""),
            Breach::UnbalancedLower { at, to } => (at.name(), to.name(), ""),
            Breach::LeftRaised { at, expected } => (at.name(), expected.name(), ""),
        };
        let format = match violation.breach {
            Breach::TooHigh { .. } => {
                c"vcdirect: W9 violation: %.*s at %.*s (allowed up to %.*s) at %.*s:%u:%u\n"
            }
            Breach::RaiseBelowCurrent { .. } => {
                c"vcdirect: W9 violation: raise from %.*s to lower %.*s%.*s at %.*s:%u:%u\n"
            }
            Breach::UnbalancedLower { .. } => {
                c"vcdirect: W9 violation: lower from %.*s to higher %.*s%.*s at %.*s:%u:%u\n"
            }
            Breach::LeftRaised { .. } => {
                c"vcdirect: W9 violation: returned at %.*s (entered at %.*s)%.*s at %.*s:%u:%u\n"
            }
        };
        // SAFETY: NUL-terminated format; each `%.*s` gets an int length and a pointer to that
        // many bytes of a `&'static str`, each `%u` a u32.
        unsafe {
            DbgPrint(
                format.as_ptr(),
                a.len() as i32,
                a.as_ptr(),
                b.len() as i32,
                b.as_ptr(),
                c.len() as i32,
                c.as_ptr(),
                file.len() as i32,
                file.as_ptr(),
                line,
                column,
            )
        };
    }

    /// [`report`] for a lifecycle rule: `W9 violation: <what> at <file>:<line>:<col>`.
    #[cold]
    #[inline(never)]
    fn report_rule(what: &'static str, site: &'static Location<'static>) {
        VIOLATIONS.fetch_add(1, Ordering::Relaxed);
        let file = site.file();
        // SAFETY: NUL-terminated format; each `%.*s` gets an int length and a pointer to that
        // many bytes of a `&'static str`, each `%u` a u32.
        unsafe {
            DbgPrint(
                c"vcdirect: W9 violation: %.*s at %.*s:%u:%u\n".as_ptr(),
                what.len() as i32,
                what.as_ptr(),
                file.len() as i32,
                file.as_ptr(),
                site.line(),
                site.column(),
            )
        };
    }

    /// The fault switches: deliberately wrong calls that the Wine end to end must see caught.
    /// Each is a registry DWORD of the service key, read once in DriverEntry (absent or 0: off).
    #[derive(Clone, Copy)]
    pub(crate) enum Fault {
        /// `VcdirectWineFaultWaitInsideSpinLock`: every mount waits inside a spin lock
        /// (w9-switch-caught).
        WaitInsideSpinLock = 0,
        /// `VcdirectWineFaultWaitInReadDispatch`: every read dispatch waits, at the virtual
        /// DISPATCH_LEVEL read dispatch runs at (w9-switch-read-dispatch-caught).
        WaitInReadDispatch = 1,
        /// `VcdirectWineFaultIrpLifecycle`: every read is completed with its cancel routine
        /// set and its engine note read after the completion poison
        /// (w9-switch-irp-lifecycle-caught).
        IrpLifecycle = 2,
    }

    impl Fault {
        /// Every switch.
        pub(crate) const ALL: [Fault; 3] = [
            Fault::WaitInsideSpinLock,
            Fault::WaitInReadDispatch,
            Fault::IrpLifecycle,
        ];

        /// The registry value's name.
        pub(crate) const fn value_name(self) -> &'static str {
            match self {
                Fault::WaitInsideSpinLock => "VcdirectWineFaultWaitInsideSpinLock",
                Fault::WaitInReadDispatch => "VcdirectWineFaultWaitInReadDispatch",
                Fault::IrpLifecycle => "VcdirectWineFaultIrpLifecycle",
            }
        }

        /// Turns the switch on (DriverEntry), saying so on the debugger.
        pub(crate) fn turn_on(self) {
            FAULTS.fetch_or(1 << self as u32, Ordering::Relaxed);
            let name = self.value_name();
            // SAFETY: NUL-terminated format; `%.*s` gets an int length and a pointer to that
            // many bytes of a static str.
            unsafe {
                DbgPrint(
                    c"vcdirect: W9 fault switch on: %.*s\n".as_ptr(),
                    name.len() as i32,
                    name.as_ptr(),
                )
            };
        }

        /// The switch is on.
        pub(crate) fn is_on(self) -> bool {
            FAULTS.load(Ordering::Relaxed) & (1 << self as u32) != 0
        }
    }

    /// The fault switches turned on (bit = `Fault as u32`).
    static FAULTS: AtomicU32 = AtomicU32::new(0);

    /// The deliberately wrong call of [`Fault::WaitInsideSpinLock`]: a wait through the
    /// engine's event wrapper inside a spin lock, as a bug would write it. On Windows this is
    /// ATTEMPTED_SWITCH_FROM_DPC or IRQL_NOT_LESS_OR_EQUAL; here the wrapper's check reports it
    /// with this function's `event.wait()` as the site. The event is set before the wait, so
    /// the wait returns at once: the switch cannot hang a run.
    pub(crate) fn fault_wait_inside_spin_lock() {
        use crate::platform::{Event, Lock};
        if !Fault::WaitInsideSpinLock.is_on() {
            return;
        }
        let event = super::super::sync::KernelEvent::new();
        event.set();
        let lock = super::super::sync::SpinLock::new(());
        lock.with(|_| event.wait());
    }

    /// The load line's note: the checks are on in this image.
    pub(crate) fn announce() {
        // SAFETY: NUL-terminated format without arguments.
        unsafe {
            DbgPrint(
                c"vcdirect: W9 checks on (virtual IRQL, IRP lifecycle, remove locks)\n".as_ptr(),
            )
        };
    }

    /// Unload: reports threads still raised, then one summary line (not a violation line).
    pub(crate) fn at_unload() {
        if TABLE.raised() != 0 {
            report_lifecycle("threads still above PASSIVE_LEVEL at unload");
        }
        // SAFETY: NUL-terminated format with two `%u` arguments.
        unsafe {
            DbgPrint(
                c"vcdirect: W9 summary: %u checks, %u violations\n".as_ptr(),
                CHECKS.load(Ordering::Relaxed),
                VIOLATIONS.load(Ordering::Relaxed),
            )
        };
    }
}
