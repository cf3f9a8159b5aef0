//! The simulated host device: memory with adversarial timing (random delays between start and
//! completion, so completions reorder), injected failures by sector range, and probes for the
//! harness (outstanding operations, I/O issued after the key block, a trace hash).

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex as StdMutex;

use shuttle::rand::Rng;
use shuttle::sync::Mutex;

use vcdirect::platform::{HostDevice, HostIo, HostKind, HostLimits};
use vcdirect::Status;

use super::check::key_block::check_key_block;

type Probe = Box<dyn Fn() -> bool + Send + Sync>;
type Decoder = Box<dyn Fn(u64, &[u8]) -> Option<u32> + Send + Sync>;

/// A simulated disk.
pub struct SimHost {
    medium: Mutex<Vec<u8>>,
    limits: HostLimits,
    kind: HostKind,
    faults: StdMutex<Vec<(Range<u64>, Status)>>,
    outstanding: AtomicU64,
    max_delay: u32,
    trace: AtomicU64,
    key_blocked: StdMutex<Option<Probe>>,
    violations: StdMutex<Vec<String>>,
    decoder: StdMutex<Option<Decoder>>,
    /// Bytes that reached the medium, per upper write id (decoded from the data).
    written: StdMutex<HashMap<u32, u64>>,
    /// `written` as it was at each host flush, in order.
    flushes: StdMutex<Vec<HashMap<u32, u64>>>,
}

impl SimHost {
    /// A disk of `size` bytes holding `content`.
    pub fn new(content: Vec<u8>, limits: HostLimits, kind: HostKind, max_delay: u32) -> Self {
        SimHost {
            medium: Mutex::new(content),
            limits,
            kind,
            faults: StdMutex::new(Vec::new()),
            outstanding: AtomicU64::new(0),
            max_delay,
            trace: AtomicU64::new(0xcbf2_9ce4_8422_2325),
            key_blocked: StdMutex::new(None),
            violations: StdMutex::new(Vec::new()),
            decoder: StdMutex::new(None),
            written: StdMutex::new(HashMap::new()),
            flushes: StdMutex::new(Vec::new()),
        }
    }

    /// Makes every operation touching `range` fail with `status`.
    pub fn fail_range(&self, range: Range<u64>, status: Status) {
        self.faults.lock().unwrap().push((range, status));
    }

    /// Installs the probe that says whether the volume's key block is set.
    pub fn set_key_blocked_probe(&self, probe: Probe) {
        *self.key_blocked.lock().unwrap() = Some(probe);
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

    fn started(&self, what: u64, offset: u64, len: usize) {
        let probe = self.key_blocked.lock().unwrap();
        if let Some(p) = probe.as_ref() {
            if let Some(v) = check_key_block(p(), what, offset, len) {
                self.violations.lock().unwrap().push(v);
            }
        }
        drop(probe);
        self.outstanding.fetch_add(1, Ordering::SeqCst);
        self.record(what, offset, len as u64);
    }

    fn fault_for(&self, range: Range<u64>) -> Option<Status> {
        self.faults
            .lock()
            .unwrap()
            .iter()
            .find(|(r, _)| r.start < range.end && range.start < r.end)
            .map(|(_, s)| *s)
    }

    fn delay(&self) {
        if self.max_delay == 0 {
            return;
        }
        let n = shuttle::rand::thread_rng().gen_range(0..=self.max_delay);
        for _ in 0..n {
            shuttle::thread::yield_now();
        }
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
    op: Option<Op<'a>>,
}

impl SimIo<'_> {
    fn finish(&mut self) -> Result<usize, Status> {
        let op = self.op.take().expect("finished once");
        self.host.delay();
        let h = self.host;
        let result = match op {
            Op::Read(buf) => {
                let range = self.offset..self.offset + buf.len() as u64;
                match h.fault_for(range.clone()) {
                    Some(s) => Err(s),
                    None => {
                        let m = h.medium.lock().unwrap();
                        let end = (range.end as usize).min(m.len());
                        let n = end.saturating_sub(range.start as usize);
                        buf[..n].copy_from_slice(&m[range.start as usize..end]);
                        Ok(n)
                    }
                }
            }
            Op::Write(buf) => {
                let range = self.offset..self.offset + buf.len() as u64;
                match h.fault_for(range.clone()) {
                    Some(s) => Err(s),
                    None => {
                        let mut m = h.medium.lock().unwrap();
                        m[range.start as usize..range.end as usize].copy_from_slice(buf);
                        drop(m);
                        if let Some(d) = h.decoder.lock().unwrap().as_ref() {
                            if let Some(id) = d(range.start, &buf[..512.min(buf.len())]) {
                                *h.written.lock().unwrap().entry(id).or_default() +=
                                    buf.len() as u64;
                            }
                        }
                        Ok(buf.len())
                    }
                }
            }
        };
        h.record(9, self.offset, result.map_or(u64::MAX, |n| n as u64));
        h.outstanding.fetch_sub(1, Ordering::SeqCst);
        result
    }
}

impl HostIo for SimIo<'_> {
    fn wait(mut self) -> Result<usize, Status> {
        self.finish()
    }
}

impl Drop for SimIo<'_> {
    fn drop(&mut self) {
        // A started operation is always waited for, even when its owner forgot.
        if self.op.is_some() {
            let _ = self.finish();
        }
    }
}

impl HostDevice for SimHost {
    type Io<'a> = SimIo<'a>;

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
        self.started(1, offset, buf.len());
        SimIo {
            host: self,
            offset,
            op: Some(Op::Read(buf)),
        }
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> SimIo<'a> {
        self.started(2, offset, buf.len());
        SimIo {
            host: self,
            offset,
            op: Some(Op::Write(buf)),
        }
    }
    fn flush(&self) -> Result<(), Status> {
        self.started(3, 0, 0);
        self.delay();
        let snapshot = self.written.lock().unwrap().clone();
        self.flushes.lock().unwrap().push(snapshot);
        self.outstanding.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}
