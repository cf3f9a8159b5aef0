//! Host devices of the user-mode host: the media a volume lives on outside the kernel.
//!
//! Owns: three implementations of [`HostDevice`] (memory, a real file or block device, and a
//! modelled NVMe device) and [`StdHost`], the one concrete type the std platform names, with
//! its spec parser (`file:PATH`, `model:nvme,...`, `memory:SIZE`).
//! Never: encrypts, or knows about volumes; every write is write-through (docs/design.md §4).

mod file;
mod memory;
mod model;

use std::marker::PhantomData;
use std::time::Instant;

pub use file::{FileHost, FileOptions};
pub use memory::{HostCounters, MemoryHost};
pub use model::{ModelHost, ModelIo, ModelParams};
use vcdirect::platform::irql::Call;
use vcdirect::platform::{Detached, HostDevice, HostIo, HostKind, HostLimits, KeptRead, Origin};
use vcdirect::Status;

/// An operation that was carried out when it was started; `wait` (or drop) only honours an
/// optional completion time (the memory host's configured latency).
pub struct ReadyIo<'a> {
    result: Result<usize, Status>,
    deadline: Option<Instant>,
    _buf: PhantomData<&'a mut [u8]>,
}

impl ReadyIo<'_> {
    pub(crate) fn new(result: Result<usize, Status>, deadline: Option<Instant>) -> Self {
        ReadyIo {
            result,
            deadline,
            _buf: PhantomData,
        }
    }

    fn sleep_until_deadline(&mut self) {
        if let Some(deadline) = self.deadline.take() {
            let now = Instant::now();
            if deadline > now {
                std::thread::sleep(deadline - now);
            }
        }
    }
}

impl HostIo for ReadyIo<'_> {
    /// Waits for the child request (KeWaitForSingleObject on its event): W9 checks the row.
    #[track_caller]
    fn wait(mut self) -> Result<usize, Status> {
        crate::irql::check(Call::Wait);
        self.sleep_until_deadline();
        self.result
    }
}

impl Drop for ReadyIo<'_> {
    fn drop(&mut self) {
        if self.deadline.is_some() {
            crate::irql::check(Call::Wait);
        }
        self.sleep_until_deadline();
    }
}

/// Reports a detached operation that was carried out when it was started: at once, on this
/// thread, raised to DISPATCH_LEVEL as a completion routine run inside IoCallDriver.
pub(crate) fn report_now(result: Result<usize, Status>, then: Detached) {
    crate::irql::raised(vcdirect::platform::irql::Irql::Dispatch, || {
        then.report(result)
    });
}

/// Why a host spec or size could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError(pub String);

impl std::fmt::Display for SpecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SpecError {}

/// Parses a byte count with an optional binary suffix: `4096`, `4K`, `1M`, `1G`, `2GiB`.
pub fn parse_size(text: &str) -> Result<u64, SpecError> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let stripped = lower
        .strip_suffix("ib")
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower);
    let (digits, mult) = match stripped.chars().last() {
        Some('k') => (&stripped[..stripped.len() - 1], 1u64 << 10),
        Some('m') => (&stripped[..stripped.len() - 1], 1 << 20),
        Some('g') => (&stripped[..stripped.len() - 1], 1 << 30),
        Some('t') => (&stripped[..stripped.len() - 1], 1 << 40),
        _ => (stripped, 1),
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| SpecError(format!("not a size: {text:?}")))?;
    n.checked_mul(mult)
        .ok_or_else(|| SpecError(format!("size too large: {text:?}")))
}

/// The host device the std platform uses: one of the three, chosen at run time.
pub enum StdHost {
    /// Memory-backed.
    Memory(MemoryHost),
    /// A real file or block device.
    File(FileHost),
    /// A modelled device (memory-backed, with modelled timing).
    Model(ModelHost),
}

/// A started operation of a [`StdHost`].
pub enum StdIo<'a> {
    /// Memory or file: carried out at start.
    Ready(ReadyIo<'a>),
    /// Model: completes at its modelled time.
    Model(ModelIo<'a>),
}

impl HostIo for StdIo<'_> {
    #[track_caller]
    fn wait(self) -> Result<usize, Status> {
        match self {
            StdIo::Ready(io) => io.wait(),
            StdIo::Model(io) => io.wait(),
        }
    }
}

impl StdHost {
    /// A host from a spec: `file:PATH[,kind=raw|container]`, `memory:SIZE`, or
    /// `model:nvme[,lat_us=80][,gbps=3.5][,channels=32][,max-transfer=128K][,size=1G]`. `default_size` is the
    /// medium size of memory-backed hosts when the spec names none.
    pub fn from_spec(spec: &str, default_size: u64) -> Result<StdHost, SpecError> {
        let (scheme, rest) = spec.split_once(':').ok_or_else(|| {
            SpecError(format!(
                "host spec {spec:?} has no scheme (file:, model:, memory:)"
            ))
        })?;
        match scheme {
            "file" => {
                let mut opts = FileOptions::default();
                let mut path = rest;
                for (suffix, kind) in [
                    (",kind=raw", HostKind::RawDevice),
                    (",kind=container", HostKind::FileContainer),
                ] {
                    if let Some(p) = rest.strip_suffix(suffix) {
                        path = p;
                        opts.kind = Some(kind);
                    }
                }
                if path.is_empty() {
                    return Err(SpecError("file: needs a path".into()));
                }
                FileHost::open(path, &opts)
                    .map(StdHost::File)
                    .map_err(|e| SpecError(format!("cannot open {path}: {e}")))
            }
            "memory" => {
                let size = if rest.is_empty() {
                    default_size
                } else {
                    parse_size(rest)?
                };
                Ok(StdHost::Memory(MemoryHost::new(size)))
            }
            "model" => {
                let (params, size) = ModelParams::parse(rest)?;
                Ok(StdHost::Model(ModelHost::new(
                    size.unwrap_or(default_size),
                    params,
                )))
            }
            other => Err(SpecError(format!(
                "unknown host kind {other:?} (file:, model:, memory:)"
            ))),
        }
    }

    /// A one-line description (kind and parameters) for reports.
    pub fn describe(&self) -> String {
        match self {
            StdHost::Memory(m) => format!("memory, {} bytes", m.size()),
            StdHost::File(f) => format!("file {} ({})", f.path().display(), f.direct_message()),
            StdHost::Model(m) => format!("{} (model, not hardware)", m.params()),
        }
    }
}

impl HostDevice for StdHost {
    type Io<'a> = StdIo<'a>;
    type Read<'a> = KeptRead<'a, StdIo<'a>>;

    fn kind(&self) -> HostKind {
        match self {
            StdHost::Memory(h) => h.kind(),
            StdHost::File(h) => h.kind(),
            StdHost::Model(h) => h.kind(),
        }
    }
    fn size(&self) -> u64 {
        match self {
            StdHost::Memory(h) => h.size(),
            StdHost::File(h) => h.size(),
            StdHost::Model(h) => h.size(),
        }
    }
    fn limits(&self) -> HostLimits {
        match self {
            StdHost::Memory(h) => h.limits(),
            StdHost::File(h) => h.limits(),
            StdHost::Model(h) => h.limits(),
        }
    }
    fn start_read<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> StdIo<'a> {
        match self {
            StdHost::Memory(h) => StdIo::Ready(h.start_read(offset, buf)),
            StdHost::File(h) => StdIo::Ready(h.start_read(offset, buf)),
            StdHost::Model(h) => StdIo::Model(h.start_read(offset, buf)),
        }
    }
    fn start_read_kept<'a>(&'a self, offset: u64, buf: &'a mut [u8]) -> Self::Read<'a> {
        match self {
            StdHost::Memory(h) => h.start_read_kept(offset, buf).map_io(StdIo::Ready),
            StdHost::File(h) => h.start_read_kept(offset, buf).map_io(StdIo::Ready),
            StdHost::Model(h) => h.start_read_kept(offset, buf).map_io(StdIo::Model),
        }
    }
    fn start_write<'a>(&'a self, offset: u64, buf: &'a [u8]) -> StdIo<'a> {
        match self {
            StdHost::Memory(h) => StdIo::Ready(h.start_write(offset, buf)),
            StdHost::File(h) => StdIo::Ready(h.start_write(offset, buf)),
            StdHost::Model(h) => StdIo::Model(h.start_write(offset, buf)),
        }
    }
    /// Sends a child request and returns (IoCallDriver): W9 checks the row.
    #[track_caller]
    fn start_read_detached(
        &self,
        offset: u64,
        buf: &mut [u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        crate::irql::check(Call::CallDriver);
        match self {
            StdHost::Memory(h) => h.start_read_detached(offset, buf, origin, then),
            StdHost::File(h) => h.start_read_detached(offset, buf, origin, then),
            StdHost::Model(h) => h.start_read_detached(offset, buf, origin, then),
        }
    }
    /// Sends a child request and returns (IoCallDriver): W9 checks the row.
    #[track_caller]
    fn start_write_detached(
        &self,
        offset: u64,
        buf: &[u8],
        origin: Origin,
        then: Detached,
    ) -> Result<(), Status> {
        crate::irql::check(Call::CallDriver);
        match self {
            StdHost::Memory(h) => h.start_write_detached(offset, buf, origin, then),
            StdHost::File(h) => h.start_write_detached(offset, buf, origin, then),
            StdHost::Model(h) => h.start_write_detached(offset, buf, origin, then),
        }
    }
    /// Waits for the model's completion context (the other hosts report inside the start).
    fn drain(&self) {
        if let StdHost::Model(h) = self {
            h.drain();
        }
    }
    /// Synchronous host I/O (ZwFlushBuffersFile / a synchronous IRP): W9 checks the row.
    #[track_caller]
    fn flush(&self) -> Result<(), Status> {
        crate::irql::check(Call::HostSyncIo);
        match self {
            StdHost::Memory(h) => h.flush(),
            StdHost::File(h) => h.flush(),
            StdHost::Model(h) => h.flush(),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes_and_reject_garbage() {
        let table = [
            ("4096", 4096),
            ("4K", 4096),
            ("1M", 1 << 20),
            ("1G", 1 << 30),
            ("2GiB", 2 << 30),
        ];
        for (text, want) in table {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
        for bad in ["", "x", "1Q", "-1", "99999999999T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn specs_pick_the_right_host_and_bad_specs_are_clear_errors() {
        let h = StdHost::from_spec("memory:1M", 0).unwrap();
        assert!(matches!(h, StdHost::Memory(_)));
        assert_eq!(h.size(), 1 << 20);
        let h = StdHost::from_spec("model:nvme,lat_us=50,size=2M", 0).unwrap();
        assert!(matches!(h, StdHost::Model(_)));
        assert_eq!(h.size(), 2 << 20);
        assert!(h.describe().contains("model, not hardware"));
        for bad in [
            "nothing",
            "tape:x",
            "file:",
            "model:nvme,lat_us=x",
            "model:hdd",
            "memory:big",
        ] {
            let err = StdHost::from_spec(bad, 1 << 20).err().expect(bad);
            assert!(!err.0.is_empty());
        }
    }

    #[test]
    fn std_host_dispatches_read_after_write() {
        let h = StdHost::from_spec("memory:64K", 0).unwrap();
        let data = vec![7u8; 4096];
        assert_eq!(h.write(8192, &data), Ok(4096));
        let mut back = vec![0u8; 4096];
        assert_eq!(h.read(8192, &mut back), Ok(4096));
        assert_eq!(back, data);
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for align in [512, 4096] {
            let mut b = crate::request::Buf::zeroed_aligned(8192, align);
            assert_eq!(b.as_slice().as_ptr() as usize % align, 0);
            assert_eq!(b.as_mut_slice().len(), 8192);
        }
    }
}
