//! A memory-backed host device for tests and for the model host.
//!
//! Storage is split into 64 KiB chunks, each behind its own reader-writer lock and allocated on
//! first write (unwritten chunks read as zeros), so operations on disjoint ranges from many
//! threads never serialize on one lock.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use vcdirect::platform::{Detached, HostDevice, HostKind, HostLimits, KeptRead, Origin};
use vcdirect::Status;

use super::ReadyIo;

const CHUNK: usize = 64 * 1024;

/// Operation counters of a host (a snapshot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostCounters {
    /// Reads started.
    pub reads: u64,
    /// Writes started.
    pub writes: u64,
    /// Bytes read successfully.
    pub read_bytes: u64,
    /// Bytes written successfully.
    pub write_bytes: u64,
    /// Flushes.
    pub flushes: u64,
    /// Operations that failed (faults, bad parameters).
    pub failures: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    reads: AtomicU64,
    writes: AtomicU64,
    read_bytes: AtomicU64,
    write_bytes: AtomicU64,
    flushes: AtomicU64,
    failures: AtomicU64,
}

impl Counters {
    pub(crate) fn record(&self, write: bool, result: &Result<usize, Status>) {
        let (ops, bytes) = if write {
            (&self.writes, &self.write_bytes)
        } else {
            (&self.reads, &self.read_bytes)
        };
        ops.fetch_add(1, Ordering::Relaxed);
        match result {
            Ok(n) => {
                bytes.fetch_add(*n as u64, Ordering::Relaxed);
            }
            Err(_) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    pub(crate) fn record_flush(&self) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn snapshot(&self) -> HostCounters {
        HostCounters {
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            read_bytes: self.read_bytes.load(Ordering::Relaxed),
            write_bytes: self.write_bytes.load(Ordering::Relaxed),
            flushes: self.flushes.load(Ordering::Relaxed),
            failures: self.failures.load(Ordering::Relaxed),
        }
    }
}

/// Checks an operation against the device's limits the way a real device refuses it: offset
/// and length in whole sectors, within the transfer and page limits, buffer aligned, and (for
/// writes) inside the medium. Returns how many bytes to transfer (reads past the end are short).
pub(crate) fn check_request(
    limits: &HostLimits,
    size: u64,
    offset: u64,
    buf_addr: usize,
    len: usize,
    write: bool,
) -> Result<usize, Status> {
    let sector = u64::from(limits.sector_size.max(1));
    let len64 = len as u64;
    if !offset.is_multiple_of(sector)
        || !len64.is_multiple_of(sector)
        || len64 > u64::from(limits.max_transfer)
    {
        return Err(Status::InvalidParameter);
    }
    if buf_addr & limits.alignment_mask as usize != 0 {
        return Err(Status::InvalidParameter);
    }
    let page = limits.page_size.max(1) as usize;
    let pages = ((buf_addr % page) + len).div_ceil(page);
    if pages as u64 > u64::from(limits.max_physical_pages) {
        return Err(Status::InvalidParameter);
    }
    let end = offset.checked_add(len64).ok_or(Status::InvalidParameter)?;
    if write {
        if end > size {
            return Err(Status::InvalidParameter);
        }
        Ok(len)
    } else {
        Ok(size.saturating_sub(offset).min(len64) as usize)
    }
}

/// A memory-backed host device. See the module documentation.
pub struct MemoryHost {
    chunks: Vec<RwLock<Vec<u8>>>,
    size: u64,
    kind: HostKind,
    limits: HostLimits,
    faults: RwLock<Vec<(Range<u64>, Status)>>,
    /// Short-transfer fault mode: an operation reaching into one of these ranges moves only
    /// the bytes before it and reports that count (W12).
    shorts: RwLock<Vec<Range<u64>>>,
    counters: Counters,
    latency: Option<Duration>,
    /// Every flush fails with this status while set (`fail_flushes`).
    flush_failure: RwLock<Option<Status>>,
}

impl MemoryHost {
    /// A raw device of `size` bytes with no limits beyond 512-byte sectors.
    pub fn new(size: u64) -> Self {
        let chunks = size.div_ceil(CHUNK as u64) as usize;
        MemoryHost {
            chunks: (0..chunks).map(|_| RwLock::new(Vec::new())).collect(),
            size,
            kind: HostKind::RawDevice,
            limits: HostLimits::unlimited(),
            faults: RwLock::new(Vec::new()),
            shorts: RwLock::new(Vec::new()),
            counters: Counters::default(),
            latency: None,
            flush_failure: RwLock::new(None),
        }
    }

    /// Sets the transfer limits it enforces.
    pub fn with_limits(mut self, limits: HostLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets the kind it reports.
    pub fn with_kind(mut self, kind: HostKind) -> Self {
        self.kind = kind;
        self
    }

    /// Makes every operation take at least `latency` before `wait` returns.
    pub fn with_latency(mut self, latency: Duration) -> Self {
        self.latency = Some(latency);
        self
    }

    /// Makes every flush fail with `status` (`None`: flushes succeed again), as a disk whose
    /// cache cannot be written out.
    pub fn fail_flushes(&self, status: Option<Status>) {
        *self
            .flush_failure
            .write()
            .unwrap_or_else(|e| e.into_inner()) = status;
    }

    /// Makes every operation that touches `bytes` fail with `status` (no data moves).
    pub fn fail_range(&self, bytes: Range<u64>, status: Status) {
        self.faults
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push((bytes, status));
    }

    /// Short-transfer fault mode: every operation that reaches into `bytes` transfers only
    /// the bytes before `bytes.start` (none if it starts inside) and returns that count, as a
    /// host that completes a request short does.
    pub fn short_range(&self, bytes: Range<u64>) {
        self.shorts
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(bytes);
    }

    /// Removes every injected fault (failures and short transfers).
    pub fn clear_faults(&self) {
        self.faults
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.shorts
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    /// How many of `len` bytes at `offset` the short-transfer mode lets through.
    fn short_len(&self, offset: u64, len: usize) -> usize {
        let end = offset.saturating_add(len as u64);
        let shorts = self.shorts.read().unwrap_or_else(|e| e.into_inner());
        shorts
            .iter()
            .filter(|r| r.start < end && offset < r.end)
            .map(|r| r.start.saturating_sub(offset) as usize)
            .fold(len, usize::min)
    }

    /// The counters so far.
    pub fn counters(&self) -> HostCounters {
        self.counters.snapshot()
    }

    /// A copy of the whole medium.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.size as usize];
        self.copy_out(0, &mut out);
        out
    }

    fn fault_for(&self, offset: u64, len: usize) -> Option<Status> {
        let end = offset.saturating_add(len as u64);
        let faults = self.faults.read().unwrap_or_else(|e| e.into_inner());
        faults
            .iter()
            .find(|(r, _)| r.start < end && offset < r.end && len > 0)
            .map(|(_, s)| *s)
    }

    fn copy_out(&self, offset: u64, out: &mut [u8]) {
        let mut pos = offset as usize;
        let mut done = 0;
        while done < out.len() {
            let (idx, within) = (pos / CHUNK, pos % CHUNK);
            let n = (CHUNK - within).min(out.len() - done);
            let chunk = self.chunks[idx].read().unwrap_or_else(|e| e.into_inner());
            if chunk.is_empty() {
                out[done..done + n].fill(0);
            } else {
                out[done..done + n].copy_from_slice(&chunk[within..within + n]);
            }
            pos += n;
            done += n;
        }
    }

    fn copy_in(&self, offset: u64, data: &[u8]) {
        let mut pos = offset as usize;
        let mut done = 0;
        while done < data.len() {
            let (idx, within) = (pos / CHUNK, pos % CHUNK);
            let n = (CHUNK - within).min(data.len() - done);
            let mut chunk = self.chunks[idx].write().unwrap_or_else(|e| e.into_inner());
            if chunk.is_empty() {
                chunk.resize(CHUNK, 0);
            }
            chunk[within..within + n].copy_from_slice(&data[done..done + n]);
            pos += n;
            done += n;
        }
    }

    /// Carries out a read now (the model host times it separately).
    pub(crate) fn do_read(&self, offset: u64, buf: &mut [u8]) -> Result<usize, Status> {
        let result = check_request(
            &self.limits,
            self.size,
            offset,
            buf.as_ptr() as usize,
            buf.len(),
            false,
        )
        .and_then(|n| match self.fault_for(offset, buf.len()) {
            Some(status) => Err(status),
            None => {
                let n = self.short_len(offset, n);
                self.copy_out(offset, &mut buf[..n]);
                Ok(n)
            }
        });
        self.counters.record(false, &result);
        result
    }

    /// Carries out a write now.
    pub(crate) fn do_write(&self, offset: u64, buf: &[u8]) -> Result<usize, Status> {
        let result = check_request(
            &self.limits,
            self.size,
            offset,
            buf.as_ptr() as usize,
            buf.len(),
            true,
        )
        .and_then(|n| match self.fault_for(offset, buf.len()) {
            Some(status) => Err(status),
            None => {
                let n = self.short_len(offset, n);
                self.copy_in(offset, &buf[..n]);
                Ok(n)
            }
        });
        self.counters.record(true, &result);
        result
    }

    /// A detached operation: carried out now by `op` and reported at once; none with a
    /// configured latency (its operations wait).
    fn detached(
        &self,
        then: Detached,
        op: impl FnOnce() -> Result<usize, Status>,
    ) -> Result<(), Status> {
        if self.latency.is_some() {
            return Err(Status::InvalidDeviceRequest);
        }
        super::report_now(op(), then);
        Ok(())
    }

    fn deadline(&self) -> Option<Instant> {
        self.latency.map(|l| Instant::now() + l)
    }
}

impl HostDevice for MemoryHost {
    type Io<'a> = ReadyIo<'a>;
    type Read<'a> = KeptRead<'a, ReadyIo<'a>>;

    fn kind(&self) -> HostKind {
        self.kind
    }
    fn size(&self) -> u64 {
        self.size
    }
    fn limits(&self) -> HostLimits {
        self.limits
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> ReadyIo<'a> {
        let deadline = self.deadline();
        ReadyIo::new(self.do_read(offset, buf), deadline)
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        let deadline = self.deadline();
        KeptRead::new(ReadyIo::new(self.do_read(offset, buf), deadline), buf)
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> ReadyIo<'a> {
        let deadline = self.deadline();
        ReadyIo::new(self.do_write(offset, buf), deadline)
    }
    /// Carried out now, as every operation of this host; the end is reported at once on this
    /// thread, raised to DISPATCH_LEVEL as a completion routine that runs inside IoCallDriver.
    /// A host with a configured latency has no detached reads (its operations wait).
    /// As [`start_read_detached`](Self::start_read_detached), for a write.
    fn start_write_detached(
        &self,
        offset: u64,
        buf: &[u8],
        _origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        self.detached(then, || self.do_write(offset, buf))
    }
    /// Carried out now, as every operation of this host; the end is reported at once on this
    /// thread, raised to DISPATCH_LEVEL as a completion routine that runs inside IoCallDriver.
    /// A host with a configured latency has no detached requests (its operations wait).
    fn start_read_detached(
        &self,
        offset: u64,
        buf: &mut [u8],
        _origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        self.detached(then, || self.do_read(offset, buf))
    }
    /// Synchronous host I/O: W9 checks the row.
    #[track_caller]
    fn flush(&self) -> Result<(), Status> {
        crate::irql::check(vcdirect::platform::irql::Call::HostSyncIo);
        self.counters.record_flush();
        match *self.flush_failure.read().unwrap_or_else(|e| e.into_inner()) {
            Some(status) => Err(status),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use vcdirect::platform::HostIo;

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn read_after_write_across_chunk_boundaries() {
        let h = MemoryHost::new(1 << 20);
        let data = pattern(3 * CHUNK / 2, 5);
        let off = (CHUNK - 1024) as u64;
        assert_eq!(h.write(off, &data), Ok(data.len()));
        let mut back = vec![0u8; data.len()];
        assert_eq!(h.read(off, &mut back), Ok(data.len()));
        assert_eq!(back, data);
        let snap = h.snapshot();
        assert_eq!(&snap[off as usize..off as usize + data.len()], &data[..]);
        assert!(snap[..off as usize].iter().all(|&b| b == 0));
        let c = h.counters();
        assert_eq!(
            (c.reads, c.writes, c.read_bytes, c.write_bytes),
            (1, 1, data.len() as u64, data.len() as u64)
        );
    }

    #[test]
    fn fault_ranges_fail_every_touching_op_until_cleared() {
        let h = MemoryHost::new(1 << 20);
        h.fail_range(8192..8704, Status::IoDeviceError);
        let mut buf = vec![0u8; 4096];
        assert_eq!(
            h.read(6144, &mut buf),
            Err(Status::IoDeviceError),
            "overlaps the fault's start"
        );
        assert_eq!(h.write(8192, &buf[..512]), Err(Status::IoDeviceError));
        assert_eq!(
            h.read(4096, &mut buf),
            Ok(4096),
            "ends right before the fault"
        );
        assert_eq!(
            h.read(8704, &mut buf),
            Ok(4096),
            "starts right after the fault"
        );
        h.fail_range(0..512, Status::Host(0xC000_0043));
        assert_eq!(h.read(0, &mut buf), Err(Status::Host(0xC000_0043)));
        assert_eq!(h.counters().failures, 3);
        h.clear_faults();
        assert_eq!(h.read(6144, &mut buf), Ok(4096));
    }

    #[test]
    fn limits_are_enforced_and_reads_past_the_end_are_short() {
        let limits = HostLimits {
            sector_size: 512,
            max_transfer: 8192,
            max_physical_pages: 2,
            alignment_mask: 511,
            page_size: 4096,
        };
        let h = MemoryHost::new(64 * 1024)
            .with_limits(limits)
            .with_kind(HostKind::FileContainer);
        assert_eq!(h.kind(), HostKind::FileContainer);
        let mut big = crate::request::Buf::zeroed_aligned(16384, 4096);
        let buf = big.as_mut_slice();
        assert_eq!(
            h.read(1, &mut buf[..512]),
            Err(Status::InvalidParameter),
            "misaligned offset"
        );
        assert_eq!(
            h.read(0, &mut buf[..100]),
            Err(Status::InvalidParameter),
            "partial sector"
        );
        assert_eq!(
            h.read(0, &mut buf[..16384]),
            Err(Status::InvalidParameter),
            "over max transfer"
        );
        assert_eq!(
            h.read(0, &mut buf[512..512 + 8192]),
            Err(Status::InvalidParameter),
            "three pages"
        );
        assert_eq!(
            h.read(0, &mut buf[1..513]),
            Err(Status::InvalidParameter),
            "misaligned buffer"
        );
        assert_eq!(
            h.read(60 * 1024, &mut buf[..8192]),
            Ok(4096),
            "short read at the end"
        );
        assert_eq!(
            h.write(60 * 1024, &buf[..8192]),
            Err(Status::InvalidParameter),
            "write past end"
        );
    }

    #[test]
    fn dropped_io_still_waits_for_its_latency() {
        let h = MemoryHost::new(1 << 16).with_latency(Duration::from_millis(20));
        let mut buf = vec![0u8; 512];
        let t = Instant::now();
        drop(h.start_read(0, &mut buf));
        assert!(t.elapsed() >= Duration::from_millis(20));
        let t = Instant::now();
        assert_eq!(h.start_write(0, &buf).wait(), Ok(512));
        assert!(t.elapsed() >= Duration::from_millis(20));
    }

    #[test]
    fn many_threads_write_disjoint_ranges_and_all_land() {
        let h = Arc::new(MemoryHost::new(4 << 20));
        let threads: Vec<_> = (0..8u8)
            .map(|t| {
                let h = Arc::clone(&h);
                std::thread::spawn(move || {
                    for i in 0..64u64 {
                        let off = (u64::from(t) * 64 + i) * 8192;
                        h.write(off, &pattern(8192, t.wrapping_add(i as u8)))
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        for t in 0..8u8 {
            for i in 0..64u64 {
                let off = (u64::from(t) * 64 + i) * 8192;
                let mut back = vec![0u8; 8192];
                h.read(off, &mut back).unwrap();
                assert_eq!(back, pattern(8192, t.wrapping_add(i as u8)));
            }
        }
    }
}
