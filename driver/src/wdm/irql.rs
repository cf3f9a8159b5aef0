//! The virtual IRQL of the wine-host build (docs/review.md W9), and its IRP and remove-lock
//! lifecycle checks.
//!
//! Owns: where each kernel thread's virtual level lives in the Wine build (a fixed table keyed
//! by the thread's TEB address), raising it where Windows runs the glue at DISPATCH_LEVEL (spin
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
//! table (`platform::irql_table`, unit-tested on the host) needs no import, allocates nothing
//! and takes no lock.
//!
//! Why the TEB and not `KeGetCurrentThread()`: under Wine the request thread's
//! KeGetCurrentThread is the cached KTHREAD of the client thread it served, held without a
//! reference; when the client exits Wine frees it, and a new system thread's KTHREAD can land
//! on the same address, so two live threads would share one entry. A thread's TEB (x64:
//! `gs:[0x30]`, NT_TIB.Self) is never 0 and is unique while the thread lives; a thread that
//! starts (system thread, work item routine) and finds its key already raised is reported.
//! The wine-host image is x64 only: another architecture with this feature does not compile.

#[cfg(all(feature = "wine-host", not(target_arch = "x86_64")))]
compile_error!("the wine-host build is x64 only (its virtual IRQL is keyed by gs:[0x30])");

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

    /// Product build: no check.
    #[inline(always)]
    pub(crate) fn check_entered_at_passive() {}
}

#[cfg(feature = "wine-host")]
mod wine {
    use core::panic::Location;
    use core::sync::atomic::{AtomicU32, Ordering};

    use wdk_sys::ntddk::DbgPrint;

    use crate::platform::irql::{Breach, Call, Irql, Violation, VirtualIrql};
    use crate::platform::irql_table::IrqlTable;

    /// Threads that may be above PASSIVE_LEVEL at the same time (an entry only while raised,
    /// `platform::irql_table`): the engine's threads of a few mounts plus Wine's dispatch and
    /// work-item threads stay far below it. A full table is reported as a violation (the run
    /// fails; nothing is checked wrongly).
    const SLOTS: usize = 256;
    /// The raised threads, keyed by their TEB address.
    static TABLE: IrqlTable<SLOTS> = IrqlTable::new();
    /// Violations reported since load (the unload summary prints it).
    static VIOLATIONS: AtomicU32 = AtomicU32::new(0);
    /// Checks made since load (the unload summary prints it: the checks did run).
    static CHECKS: AtomicU32 = AtomicU32::new(0);

    /// The calling thread's TEB address: NT_TIB.Self at `gs:[0x30]` on x64 (Windows and Wine
    /// both keep the TEB in gs for user-mode threads, and Wine's kernel threads are user-mode
    /// threads of winedevice). Never 0 and unique while the thread lives.
    #[inline(always)]
    fn teb() -> usize {
        let teb: usize;
        // SAFETY: reads one pointer-sized value from the calling thread's own TEB (gs base,
        // set by the loader for every thread, readable while the thread runs); no memory is
        // written and no flags or stack are touched.
        unsafe {
            core::arch::asm!(
                "mov {}, gs:[0x30]",
                out(reg) teb,
                options(nostack, readonly, preserves_flags)
            )
        };
        teb
    }

    /// Threads that had no TEB (key 0, which the table cannot record): counted, reported once.
    static UNKEYED: AtomicU32 = AtomicU32::new(0);

    /// Counts a thread without a TEB (key 0, which x64 Windows and Wine never give a running
    /// thread) and reports the first. Cold and out of line: `current` is inlined into every
    /// spin lock guard.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn unkeyed() {
        if UNKEYED.fetch_add(1, Ordering::Relaxed) == 0 {
            report_rule(
                "thread without a TEB: its virtual IRQL is not tracked",
                Location::caller(),
            );
        }
    }

    /// The calling thread's key (its TEB address) and its level.
    #[track_caller]
    fn current() -> (usize, VirtualIrql) {
        let key = teb();
        if key == 0 {
            unkeyed();
        }
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
            Self::to(Irql::Dispatch)
        }

        /// Raises the calling thread's virtual IRQL to APC_LEVEL (the fault switch
        /// [`Fault::VerifyAtApc`]: device-control dispatch as the paging path can send it).
        #[track_caller]
        pub(crate) fn to_apc() -> Raised {
            Self::to(Irql::Apc)
        }

        #[track_caller]
        fn to(level: Irql) -> Raised {
            let (key, mut irql) = current();
            let previous = match irql.raise(level) {
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

    /// The calling thread is at virtual PASSIVE_LEVEL (whether a dispatching thread may issue
    /// a read itself, `wdm/thread.rs`).
    #[track_caller]
    pub(crate) fn at_passive() -> bool {
        current().1.level() == Irql::Passive
    }

    /// Checks that the calling thread returns to the system (thread exit, work item end) at
    /// `expected`.
    #[track_caller]
    pub(crate) fn check_returned_at(expected: Irql) {
        CHECKS.fetch_add(1, Ordering::Relaxed);
        let (key, irql) = current();
        if let Err(violation) = irql.check_returned_at(expected) {
            report(&violation);
            // The thread goes back to the system: drop its entry so that the thread's next
            // work (or a later thread with the same TEB) does not inherit the level.
            store(key, Irql::Passive);
        }
    }

    /// Checks that a thread entering the driver fresh (a system thread's start routine, a work
    /// item routine) has no level recorded under its key: one found raised is a stale entry
    /// (another thread's, keyed the same, or a level leaked by the thread's previous work),
    /// reported and dropped so that the thread starts at PASSIVE_LEVEL.
    /// Out of line: its frame is then not part of the thread start routine's, which the
    /// worker path's stack budget counts under the thread's whole body.
    #[track_caller]
    #[inline(never)]
    pub(crate) fn check_entered_at_passive() {
        CHECKS.fetch_add(1, Ordering::Relaxed);
        let (key, irql) = current();
        if irql.level() != Irql::Passive {
            report_rule(
                "fresh thread or work item found its key already raised",
                Location::caller(),
            );
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
        /// `VcdirectWineFaultVerifyAtApc`: device-control dispatch of IOCTL_DISK_VERIFY runs at
        /// virtual APC_LEVEL, as the paging path can send it: VERIFY is pended and served on an
        /// engine thread all the same, nothing in its dispatch waits or reads the host
        /// (w9-switch-verify-at-apc-served).
        VerifyAtApc = 3,
    }

    impl Fault {
        /// Every switch.
        pub(crate) const ALL: [Fault; 4] = [
            Fault::WaitInsideSpinLock,
            Fault::WaitInReadDispatch,
            Fault::IrpLifecycle,
            Fault::VerifyAtApc,
        ];

        /// The registry value's name.
        pub(crate) const fn value_name(self) -> &'static str {
            match self {
                Fault::WaitInsideSpinLock => "VcdirectWineFaultWaitInsideSpinLock",
                Fault::WaitInReadDispatch => "VcdirectWineFaultWaitInReadDispatch",
                Fault::IrpLifecycle => "VcdirectWineFaultIrpLifecycle",
                Fault::VerifyAtApc => "VcdirectWineFaultVerifyAtApc",
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
        // (An event that cannot be made skips the deliberate violation.)
        let Ok(event) = super::super::sync::KernelEvent::try_new() else {
            return;
        };
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
        if UNKEYED.load(Ordering::Relaxed) != 0 {
            report_lifecycle("threads without a TEB were not tracked");
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
