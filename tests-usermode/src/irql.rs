//! The virtual IRQL of the user-mode platforms (docs/review.md W9).
//!
//! Owns: where each thread's [`VirtualIrql`] lives (a thread-local of the std platform, a
//! shuttle thread-local in the simulator, where every simulated thread runs on one OS thread),
//! the raised sections the user-mode platforms run ([`raised`]: spin locks, read/write
//! dispatch, the cancel routine, host completions), the checks their wrappers make
//! ([`check`], one row of [`Call`] each), and what a broken contract does: a panic with the
//! [`Violation`]'s text in the std platform, a recorded violation that fails the seed in the
//! simulator ([`take_recorded`]).
//! Never: holds a table of contracts (that is `vcdirect::platform::irql`, the one table), or
//! checks anything under loom (its threads share one OS thread and switch inside raised
//! sections; its models check orderings, not levels).

use std::cell::{Cell, RefCell};
use std::panic::Location;
use std::sync::Arc;

use vcdirect::platform::irql::{Call, Irql, Violation, VirtualIrql};
use vcdirect::platform::{RequestKind, UpperRequest};
use vcdirect::volume::Volume;

/// Where the calling OS thread keeps the level, and what a violation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Real threads (the std platform): a thread-local per thread; a violation panics.
    Std,
    /// The simulator: a shuttle thread-local per simulated thread; a violation is recorded
    /// for the seed's report and the run goes on.
    Sim,
    /// No level is kept and nothing is checked (loom models).
    Off,
}

std::thread_local! {
    static MODE: Cell<Mode> = const { Cell::new(Mode::Std) };
    static LEVEL: Cell<VirtualIrql> = const { Cell::new(VirtualIrql::new()) };
    /// The simulator's violations, on the OS thread that runs the seed.
    static RECORDED: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

shuttle::thread_local! {
    static SIM_LEVEL: Cell<VirtualIrql> = const { Cell::new(VirtualIrql::new()) };
}

/// Sets how the calling OS thread keeps the level; returns the previous mode.
pub fn set_mode(mode: Mode) -> Mode {
    MODE.with(|m| m.replace(mode))
}

/// How the calling OS thread keeps the level.
pub fn mode() -> Mode {
    MODE.with(Cell::get)
}

/// Takes the violations the simulator recorded on this OS thread.
pub fn take_recorded() -> Vec<String> {
    RECORDED.with(|r| std::mem::take(&mut *r.borrow_mut()))
}

fn load(mode: Mode) -> VirtualIrql {
    match mode {
        Mode::Std => LEVEL.with(Cell::get),
        Mode::Sim => SIM_LEVEL.with(Cell::get),
        Mode::Off => VirtualIrql::new(),
    }
}

fn store(mode: Mode, irql: VirtualIrql) {
    match mode {
        Mode::Std => LEVEL.with(|c| c.set(irql)),
        Mode::Sim => SIM_LEVEL.with(|c| c.set(irql)),
        Mode::Off => {}
    }
}

fn report(mode: Mode, violation: Violation) {
    match mode {
        Mode::Std => panic!("{violation}"),
        Mode::Sim => RECORDED.with(|r| r.borrow_mut().push(violation.to_string())),
        Mode::Off => {}
    }
}

/// The calling thread's level (PASSIVE where nothing is kept).
pub fn level() -> Irql {
    load(MODE.with(Cell::get)).level()
}

/// The mode to keep the level in now: `Off` while a simulated thread unwinds (shuttle may be
/// tearing the execution down, when its thread-locals are out of reach).
fn active_mode() -> Mode {
    match MODE.with(Cell::get) {
        Mode::Sim if std::thread::panicking() => Mode::Off,
        mode => mode,
    }
}

/// Checks that `call` may run at the calling thread's level; the violation names the caller.
#[track_caller]
pub fn check(call: Call) {
    let mode = active_mode();
    if mode == Mode::Off {
        return;
    }
    if let Err(violation) = load(mode).check(call) {
        report(mode, violation);
    }
}

/// Checks that a thread returns to the system (thread exit, work item end) at PASSIVE_LEVEL.
#[track_caller]
pub fn check_returned_at_passive() {
    let mode = active_mode();
    if mode == Mode::Off {
        return;
    }
    let irql = load(mode);
    if let Err(violation) = irql.check_returned_at(Irql::Passive) {
        // Back to PASSIVE, so the thread's next work item is not blamed too.
        store(mode, VirtualIrql::new());
        report(mode, violation);
    }
}

/// Lowers back to the level a raise returned when dropped, also while unwinding.
struct Lower {
    mode: Mode,
    to: Irql,
    site: &'static Location<'static>,
}

impl Drop for Lower {
    fn drop(&mut self) {
        if self.mode == Mode::Sim && std::thread::panicking() {
            return;
        }
        let mut irql = load(self.mode);
        let lowered = irql.lower(self.to);
        store(self.mode, irql);
        if let Err(mut violation) = lowered {
            violation.site = self.site;
            if !std::thread::panicking() {
                report(self.mode, violation);
            }
        }
    }
}

/// Runs `f` with the calling thread raised to `to` (KeRaiseIrql ... KeLowerIrql), and lowers
/// back afterwards, also when `f` panics.
#[track_caller]
pub fn raised<R>(to: Irql, f: impl FnOnce() -> R) -> R {
    let mode = active_mode();
    if mode == Mode::Off {
        return f();
    }
    let site = Location::caller();
    let mut irql = load(mode);
    let previous = match irql.raise(to) {
        Ok(previous) => previous,
        Err(violation) => {
            report(mode, violation);
            irql.level()
        }
    };
    store(mode, irql);
    let _lower = Lower {
        mode,
        to: previous,
        site,
    };
    f()
}

/// Read/write dispatch at DISPATCH_LEVEL, as Windows may call it (a driver above may send
/// reads and writes from a completion routine or while holding a spin lock): the engine must
/// neither wait nor issue host I/O on this thread. Flushes and every other request are
/// dispatched at PASSIVE_LEVEL, as the I/O manager sends them.
#[track_caller]
pub fn dispatch<P: vcdirect::platform::Platform>(volume: &Arc<Volume<P>>, request: P::Request) {
    dispatch_at(Irql::Dispatch, volume, request);
}

/// Read/write dispatch at `level` (PASSIVE_LEVEL: an application's request through the file
/// system, the common case, where the engine may issue a small read on this thread), and a
/// VERIFY's (its dispatch only queues it, at any level up to DISPATCH_LEVEL); every other
/// request at PASSIVE_LEVEL. The one entry the user-mode harnesses (tests, `vcsim`,
/// `vcbench`) dispatch through.
#[track_caller]
pub fn dispatch_at<P: vcdirect::platform::Platform>(
    level: Irql,
    volume: &Arc<Volume<P>>,
    request: P::Request,
) {
    match request.kind() {
        RequestKind::Read | RequestKind::Write | RequestKind::Verify => {
            raised(level, || volume.dispatch(request))
        }
        _ => volume.dispatch(request),
    }
}
