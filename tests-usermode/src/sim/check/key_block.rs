//! docs/review.md R2: once the volume's keys are blocked, no host data transfer starts (a flush
//! carries no data and needs no key). Only the host sees the moment an operation starts, so the
//! simulated host calls this at each start, with the volume's block flag read through a probe.

/// The violation, if a data transfer (`op` 1 read, 2 write; 3 is a flush) starts while the
/// key block is set.
pub(crate) fn check_key_block(
    key_blocked: bool,
    op: u64,
    offset: u64,
    len: usize,
) -> Option<String> {
    (key_blocked && op != 3).then(|| {
        format!("R2: host I/O issued after the key block (op {op}, offset {offset}, {len} bytes)")
    })
}
