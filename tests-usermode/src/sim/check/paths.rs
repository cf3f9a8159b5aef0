//! Path choice: every request the volume's gates make eligible goes direct, whatever the load
//! (the direct counters match the log; a cancelled request may count or not).

use vcdirect::platform::HostLimits;
use vcdirect::Status;

use crate::sim::log::{LogEntry, OpKind, NOTHING_WRITTEN};
use crate::sim::SimConfig;

pub(crate) fn check_paths(
    log: &[LogEntry],
    cfg: &SimConfig,
    c: &vcdirect::volume::CounterSnapshot,
    limits: HostLimits,
    violations: &mut Vec<String>,
) {
    let _ = limits;
    let eff_read = cfg.gates.read && cfg.raw;
    let eff_write = cfg.gates.write && cfg.raw && !cfg.read_only;
    // A request cancelled while queued was never served by a path (its cancel routine took it
    // out), one cancelled after a worker took it was: each cancelled one may count or not.
    let (mut reads, mut writes) = (0u64, 0u64);
    let (mut cancelled_reads, mut cancelled_writes) = (0u64, 0u64);
    for e in log {
        let Some(o) = &e.outcome else { continue };
        if e.expected.is_some() || NOTHING_WRITTEN.contains(&o.status) {
            continue;
        }
        let cancelled = o.status == Status::Cancelled;
        match e.kind {
            OpKind::Read if eff_read && cancelled => cancelled_reads += 1,
            OpKind::Read if eff_read => reads += 1,
            OpKind::Write if eff_write && cancelled => cancelled_writes += 1,
            OpKind::Write if eff_write => writes += 1,
            _ => {}
        }
    }
    let within =
        |got: u64, served: u64, cancelled: u64| (served..=served + cancelled).contains(&got);
    if !within(c.direct_reads, reads, cancelled_reads)
        || !within(c.direct_writes, writes, cancelled_writes)
    {
        violations.push(format!(
            "path choice: {} direct reads and {} direct writes, expected {reads} (+ up to {cancelled_reads} cancelled) and {writes} (+ up to {cancelled_writes} cancelled) (every eligible request goes direct whatever the load)",
            c.direct_reads, c.direct_writes
        ));
    }
}
