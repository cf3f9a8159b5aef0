//! The simulated host device: memory with adversarial timing (random delays between start and
//! completion, so completions reorder), injected failures and short transfers by sector range,
//! and probes for the harness (outstanding operations, I/O issued after the key block, a trace
//! hash, every host write with the upper write it carried).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::sync::Mutex as StdMutex;

use shuttle::rand::Rng;
use shuttle::sync::Mutex;

use vcdirect::platform::irql::Call;
use vcdirect::platform::{Detached, HostDevice, HostIo, HostKind, HostLimits, HostRead, Origin};
use vcdirect::Status;

use super::check::key_block::check_key_block;

type Probe = Box<dyn Fn() -> bool + Send + Sync>;
type FifoProbe = Arc<dyn Fn() -> (u64, u64) + Send + Sync>;
type Decoder = Box<dyn Fn(u64, &[u8]) -> Option<u32> + Send + Sync>;

/// One host write carrying a known upper write, as the host saw it.
#[derive(Clone, Debug)]
pub(crate) struct HostWrite {
    /// The upper write's id (decoded from the data's first sector).
    pub(crate) id: u32,
    /// Host byte offset.
    pub(crate) offset: u64,
    /// Bytes asked.
    pub(crate) len: usize,
    /// Host event numbers (one counter for starts and ends): when it started, when it ended.
    pub(crate) started: u64,
    pub(crate) ended: u64,
    /// What the host reported (a short count is `Ok` with fewer than `len` bytes).
    pub(crate) result: Result<usize, Status>,
}

/// A simulated disk.
pub struct SimHost {
    medium: Mutex<Vec<u8>>,
    limits: HostLimits,
    kind: HostKind,
    faults: StdMutex<Vec<(Range<u64>, Status)>>,
    /// Ranges over which a transfer is short: it moves only the whole sectors before the
    /// range and reports success with that count.
    shorts: StdMutex<Vec<Range<u64>>>,
    /// Numbers host events (starts and ends) in order.
    events: AtomicU64,
    /// Every host write that carried a known upper write, in the order they ended.
    writes: StdMutex<Vec<HostWrite>>,
    /// Shared with the completion threads of detached reads.
    outstanding: Arc<AtomicU64>,
    /// Reads and writes the direct path started (its workers, and the reads its dispatching
    /// threads issued) and that did not finish, and the most at once (the volume's cap on host
    /// operations in flight).
    direct_outstanding: Arc<AtomicU64>,
    direct_outstanding_max: AtomicU64,
    max_delay: u32,
    trace: AtomicU64,
    key_blocked: StdMutex<Option<Probe>>,
    /// The volume's direct FIFO: jobs ever queued and ever taken out (the R12 check).
    fifo: StdMutex<Option<FifoProbe>>,
    /// Detached reads whose report has not returned yet (shared with their completion
    /// contexts).
    reporting: Arc<AtomicU64>,
    violations: StdMutex<Vec<String>>,
    decoder: StdMutex<Option<Decoder>>,
    /// Bytes that reached the medium, per upper write id (decoded from the data).
    written: StdMutex<HashMap<u32, u64>>,
    /// `written` as it was at each host flush, in order.
    flushes: StdMutex<Vec<HashMap<u32, u64>>>,
    /// Every n-th host flush fails with this status (`fail_flushes`).
    flush_failure: StdMutex<Option<(u64, Status)>>,
    /// Host flushes asked, and how many of them failed.
    flushes_asked: AtomicU64,
    flushes_failed: AtomicU64,
}

impl SimHost {
    /// A disk of `size` bytes holding `content`.
    pub fn new(content: Vec<u8>, limits: HostLimits, kind: HostKind, max_delay: u32) -> Self {
        SimHost {
            medium: Mutex::new(content),
            limits,
            kind,
            faults: StdMutex::new(Vec::new()),
            shorts: StdMutex::new(Vec::new()),
            events: AtomicU64::new(0),
            writes: StdMutex::new(Vec::new()),
            outstanding: Arc::new(AtomicU64::new(0)),
            direct_outstanding: Arc::new(AtomicU64::new(0)),
            direct_outstanding_max: AtomicU64::new(0),
            max_delay,
            trace: AtomicU64::new(0xcbf2_9ce4_8422_2325),
            key_blocked: StdMutex::new(None),
            fifo: StdMutex::new(None),
            reporting: Arc::new(AtomicU64::new(0)),
            violations: StdMutex::new(Vec::new()),
            decoder: StdMutex::new(None),
            written: StdMutex::new(HashMap::new()),
            flushes: StdMutex::new(Vec::new()),
            flush_failure: StdMutex::new(None),
            flushes_asked: AtomicU64::new(0),
            flushes_failed: AtomicU64::new(0),
        }
    }

    /// Makes every `every`-th host flush (1: all) fail with `status`, as a disk whose cache
    /// cannot be written out does.
    pub fn fail_flushes(&self, every: u64, status: Status) {
        *self.flush_failure.lock().unwrap() = Some((every.max(1), status));
    }

    /// Host flushes that failed (`fail_flushes`).
    pub fn failed_flushes(&self) -> u64 {
        self.flushes_failed.load(Ordering::SeqCst)
    }

    /// Makes every operation touching `range` fail with `status`.
    pub fn fail_range(&self, range: Range<u64>, status: Status) {
        self.faults.lock().unwrap().push((range, status));
    }

    /// Makes every read or write touching `range` short (W12): it transfers only the whole
    /// sectors before `range` (none if it starts inside it) and reports success with that count.
    pub fn short_range(&self, range: Range<u64>) {
        self.shorts.lock().unwrap().push(range);
    }

    /// The ranges given to [`SimHost::short_range`].
    pub(crate) fn short_ranges(&self) -> Vec<Range<u64>> {
        self.shorts.lock().unwrap().clone()
    }

    /// Every host write that carried a known upper write, in the order they ended.
    pub(crate) fn host_writes(&self) -> Vec<HostWrite> {
        self.writes.lock().unwrap().clone()
    }

    /// Installs the probe that says whether the volume's key block is set.
    pub fn set_key_blocked_probe(&self, probe: Probe) {
        *self.key_blocked.lock().unwrap() = Some(probe);
    }

    /// Installs the probe of the volume's direct FIFO (jobs ever queued, ever taken out).
    pub fn set_fifo_probe(&self, probe: FifoProbe) {
        *self.fifo.lock().unwrap() = Some(probe);
    }

    /// The most reads and writes the direct path's workers had in flight at once.
    pub fn direct_outstanding_max(&self) -> u64 {
        self.direct_outstanding_max.load(Ordering::SeqCst)
    }

    /// Counts an operation a direct worker starts (true), for the cap check.
    fn direct_started(&self) -> bool {
        if super::platform::current_thread_name()
            != vcdirect::platform::ThreadRole::DirectWorker.name()
        {
            return false;
        }
        let now = self.direct_outstanding.fetch_add(1, Ordering::SeqCst) + 1;
        self.direct_outstanding_max.fetch_max(now, Ordering::SeqCst);
        true
    }

    /// Operations started and not finished.
    pub fn outstanding(&self) -> u64 {
        self.outstanding.load(Ordering::SeqCst)
    }

    /// A hash of every operation in order: the same seed gives the same hash.
    pub fn trace_hash(&self) -> u64 {
        self.trace.load(Ordering::SeqCst)
    }

    /// Rule breaks the host saw.
    pub fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap().clone()
    }

    /// Installs the decoder that names the upper write a host write carries (from its first
    /// sector at a host offset).
    pub fn set_decoder(&self, decoder: Decoder) {
        *self.decoder.lock().unwrap() = Some(decoder);
    }

    /// For each host flush in order: bytes on the medium per upper write id at that moment.
    pub fn flush_snapshots(&self) -> Vec<HashMap<u32, u64>> {
        self.flushes.lock().unwrap().clone()
    }

    /// A copy of the whole medium.
    pub fn snapshot(&self) -> Vec<u8> {
        self.medium.lock().unwrap().clone()
    }

    fn record(&self, what: u64, a: u64, b: u64) {
        let mut h = self.trace.load(Ordering::SeqCst);
        for v in [what, a, b] {
            h ^= v;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.trace.store(h, Ordering::SeqCst);
    }

    fn started(&self, what: u64, offset: u64, len: usize) -> u64 {
        let probe = self.key_blocked.lock().unwrap();
        if let Some(p) = probe.as_ref() {
            if let Some(v) = check_key_block(p(), what, offset, len) {
                self.violations.lock().unwrap().push(v);
            }
        }
        drop(probe);
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        self.record(what, offset, len as u64);
        self.events.fetch_add(1, Ordering::SeqCst)
    }

    fn fault_for(&self, range: Range<u64>) -> Option<Status> {
        self.faults
            .lock()
            .unwrap()
            .iter()
            .find(|(r, _)| r.start < range.end && range.start < r.end)
            .map(|(_, s)| *s)
    }

    /// The bytes a transfer over `range` moves when a short range touches it.
    fn short_for(&self, range: Range<u64>) -> Option<usize> {
        self.shorts
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.start < range.end && range.start < r.end)
            .map(|r| r.start.saturating_sub(range.start) as usize)
            .min()
    }

    fn delay(&self) {
        delay(self.max_delay);
    }

    /// Moves a read's data from the medium now (faults and short ranges apply).
    fn read_now(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        let range = offset..offset + buf.len() as u64;
        match self.fault_for(range.clone()) {
            Some(s) => Err(s),
            None => {
                let m = self.medium.lock().unwrap();
                let short = self
                    .short_for(range.clone())
                    .map(|n| range.start as usize + n);
                let end = (range.end as usize)
                    .min(m.len())
                    .min(short.unwrap_or(usize::MAX));
                let n = end.saturating_sub(range.start as usize);
                buf[..n].copy_from_slice(&m[range.start as usize..end]);
                Ok(n)
            }
        }
    }
}

impl SimHost {
    /// Moves a write's data to the medium now (faults and short ranges apply) and records it
    /// with the upper write it carries; `started` is its start event.
    fn write_now(&self, offset: u64, buf: &[u8], started: u64) -> Result<usize, Status> {
        let h = self;
        let range = offset..offset + buf.len() as u64;
        let id = h
            .decoder
            .lock()
            .unwrap()
            .as_ref()
            .and_then(|d| d(range.start, &buf[..512.min(buf.len())]));
        let result = match h.fault_for(range.clone()) {
            Some(s) => Err(s),
            None => {
                // A short write puts only the prefix it reports on the medium.
                let n = h.short_for(range.clone()).unwrap_or(buf.len());
                let mut m = h.medium.lock().unwrap();
                m[range.start as usize..range.start as usize + n].copy_from_slice(&buf[..n]);
                drop(m);
                if let (Some(id), true) = (id, n > 0) {
                    *h.written.lock().unwrap().entry(id).or_default() += n as u64;
                }
                Ok(n)
            }
        };
        if let Some(id) = id {
            h.writes.lock().unwrap().push(HostWrite {
                id,
                offset: range.start,
                len: buf.len(),
                started,
                ended: h.events.fetch_add(1, Ordering::SeqCst),
                result,
            });
        }
        result
    }

    /// Reports a detached operation that moved its data with `result` from a simulated
    /// completion context (a thread of its own, at DISPATCH_LEVEL) after a seeded delay, so
    /// the issuer and the report race.
    fn report_later(&self, offset: u64, result: Result<usize, Status>, then: Detached) {
        self.record(9, offset, result.map_or(u64::MAX, |n| n as u64));
        let (outstanding, direct) = (
            Arc::clone(&self.outstanding),
            Arc::clone(&self.direct_outstanding),
        );
        let max_delay = self.max_delay;
        let reporting = Arc::clone(&self.reporting);
        reporting.fetch_add(1, Ordering::SeqCst);
        shuttle::thread::Builder::new()
            .name("host-completion".into())
            .spawn(move || {
                delay(max_delay);
                direct.fetch_sub(1, Ordering::SeqCst);
                outstanding.fetch_sub(1, Ordering::SeqCst);
                crate::irql::raised(vcdirect::platform::irql::Irql::Dispatch, || {
                    then.report(result)
                });
                reporting.fetch_sub(1, Ordering::SeqCst);
                crate::irql::check_returned_at_passive();
            })
            .expect("spawn a simulated completion context");
    }

    /// Checks and counts the start of a detached operation (`what` 1 read, 2 write): the key
    /// block, the R12 overtaking check, the direct path's cap; its start event.
    fn detached_start(&self, what: u64, offset: u64, len: usize) -> u64 {
        // The key-block check first: the FIFO probe takes the volume's (simulated) lock, a
        // scheduling point.
        let started = self.started(what, offset, len);
        // Called outside the host's own (real) lock: the probe takes the volume's simulated
        // lock, where another simulated thread may run and want this host's lock.
        let probe = self.fifo.lock().unwrap().clone();
        if let Some(probe) = probe {
            let (_, taken) = probe();
            if let Some(v) = super::check::overtaking::check_detached_start(taken, offset) {
                self.violations.lock().unwrap().push(v);
            }
        }
        let now = self.direct_outstanding.fetch_add(1, Ordering::SeqCst) + 1;
        self.direct_outstanding_max.fetch_max(now, Ordering::SeqCst);
        started
    }
}

/// Up to `max_delay` scheduling points (0: none).
fn delay(max_delay: u32) {
    if max_delay == 0 {
        return;
    }
    let n = shuttle::rand::thread_rng().gen_range(0..=max_delay);
    for _ in 0..n {
        shuttle::thread::yield_now();
    }
}

enum Op<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

/// A started simulated operation.
pub struct SimIo<'a> {
    host: &'a SimHost,
    offset: u64,
    started: u64,
    direct: bool,
    op: Option<Op<'a>>,
}

impl<'a> SimIo<'a> {
    fn finish(&mut self) -> Result<usize, Status> {
        self.finish_kept().0
    }

    /// Finishes the operation; a read hands its buffer back.
    fn finish_kept(&mut self) -> (Result<usize, Status>, Option<&'a mut [u8]>) {
        let op = self.op.take().expect("finished once");
        self.host.delay();
        let h = self.host;
        let mut kept = None;
        let result = match op {
            Op::Read(buf) => {
                let result = h.read_now(self.offset, buf);
                kept = Some(buf);
                result
            }
            Op::Write(buf) => h.write_now(self.offset, buf, self.started),
        };
        h.record(9, self.offset, result.map_or(u64::MAX, |n| n as u64));
        if self.direct {
            h.direct_outstanding.fetch_sub(1, Ordering::SeqCst);
        }
        h.outstanding.fetch_sub(1, Ordering::SeqCst);
        (result, kept)
    }
}

/// A started simulated read that hands its buffer back.
pub struct SimRead<'a>(SimIo<'a>);

impl<'a> HostRead<'a> for SimRead<'a> {
    #[track_caller]
    fn wait_read(mut self) -> (Result<usize, Status>, &'a mut [u8]) {
        crate::irql::check(Call::Wait);
        let (result, buf) = self.0.finish_kept();
        (result, buf.expect("a read keeps its buffer"))
    }
}

impl HostIo for SimIo<'_> {
    /// Waits for the child request (KeWaitForSingleObject on its event): W9 checks the row.
    #[track_caller]
    fn wait(mut self) -> Result<usize, Status> {
        crate::irql::check(Call::Wait);
        self.finish()
    }
}

impl Drop for SimIo<'_> {
    fn drop(&mut self) {
        // A started operation is always waited for, even when its owner forgot.
        if self.op.is_some() {
            crate::irql::check(Call::Wait);
            let _ = self.finish();
        }
    }
}

impl HostDevice for SimHost {
    type Io<'a> = SimIo<'a>;
    type Read<'a> = SimRead<'a>;

    fn kind(&self) -> HostKind {
        self.kind
    }
    fn size(&self) -> u64 {
        self.medium.lock().unwrap().len() as u64
    }
    fn limits(&self) -> HostLimits {
        self.limits
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> SimIo<'a> {
        let started = self.started(1, offset, buf.len());
        SimIo {
            host: self,
            offset,
            started,
            direct: self.direct_started(),
            op: Some(Op::Read(buf)),
        }
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> SimRead<'a> {
        SimRead(self.start_read(offset, buf))
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> SimIo<'a> {
        let started = self.started(2, offset, buf.len());
        SimIo {
            host: self,
            offset,
            started,
            direct: self.direct_started(),
            op: Some(Op::Write(buf)),
        }
    }
    /// A child request sent without a waiter (IoCallDriver: W9 checks the row). Its data
    /// moves now; its end is reported by a simulated completion context after a seeded delay.
    #[track_caller]
    fn start_read_detached(
        &self,
        offset: u64,
        buf: &mut [u8],
        _origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        crate::irql::check(Call::CallDriver);
        self.detached_start(1, offset, buf.len());
        let result = self.read_now(offset, buf);
        self.report_later(offset, result, then);
        Ok(())
    }
    /// As `start_read_detached`, for a write.
    #[track_caller]
    fn start_write_detached(
        &self,
        offset: u64,
        buf: &[u8],
        _origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        crate::irql::check(Call::CallDriver);
        let started = self.detached_start(2, offset, buf.len());
        let result = self.write_now(offset, buf, started);
        self.report_later(offset, result, then);
        Ok(())
    }
    /// Waits (at scheduling points) until every simulated completion context returned from
    /// its report.
    fn drain(&self) {
        while self.reporting.load(Ordering::SeqCst) > 0 {
            shuttle::thread::yield_now();
        }
    }
    /// Synchronous host I/O: W9 checks the row.
    #[track_caller]
    fn flush(&self) -> Result<(), Status> {
        crate::irql::check(Call::HostSyncIo);
        self.started(3, 0, 0);
        self.delay();
        let n = self.flushes_asked.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some((every, status)) = *self.flush_failure.lock().unwrap() {
            if n.is_multiple_of(every) {
                self.flushes_failed.fetch_add(1, Ordering::SeqCst);
                self.outstanding.fetch_sub(1, Ordering::SeqCst);
                return Err(status);
            }
        }
        let snapshot = self.written.lock().unwrap().clone();
        self.flushes.lock().unwrap().push(snapshot);
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
    /// Synchronous host I/O (the legacy I/O thread's ZwReadFile): W9 checks the row.
    #[track_caller]
    fn read(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        crate::irql::check(Call::HostSyncIo);
        self.start_read(offset, buf).wait()
    }
    /// Synchronous host I/O (the legacy I/O thread's ZwWriteFile): W9 checks the row.
    #[track_caller]
    fn write(&self, offset: u64, buf: &[u8]) -> Result<usize, Status> {
        crate::irql::check(Call::HostSyncIo);
        self.start_write(offset, buf).wait()
    }
}
