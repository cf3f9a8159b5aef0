//! What the load generator drives: a [`Target`] per mode.
//!
//! `raw` is the host device itself, `raw-qd8` the host behind a counting gate of 8 (the
//! direct path's bound on operations in flight, without the engine), and `legacy`/`direct`
//! go through the engine; an [`EngineFactory`] builds those (none is plugged in yet).

use std::sync::{Arc, Condvar, Mutex};

use vcdirect::platform::HostDevice;
use vcdirect::Status;

use crate::host::StdHost;
use crate::request::Buf;

/// A block target the generator calls from many threads at once, one blocking call per
/// outstanding I/O.
pub trait Target: Sync {
    /// Size in bytes.
    fn size(&self) -> u64;
    /// Buffer alignment the generator must use (a power of two).
    fn alignment(&self) -> usize;
    /// Reads `buf.len()` bytes at `offset`. The buffer is owned so an engine target can lend
    /// it to its request without a copy (the engine decrypts in place into it).
    fn read(&self, offset: u64, buf: &mut Buf) -> Result<usize, Status>;
    /// Writes `buf` at `offset`.
    fn write(&self, offset: u64, buf: &mut Buf) -> Result<usize, Status>;
    /// Engine path counters after a run (JSON), when the target has any.
    fn counters(&self) -> Option<serde_json::Value> {
        None
    }
}

/// How a run reaches the medium.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// The host device directly: no engine, no crypto (the ceiling).
    Raw,
    /// The host device behind a gate of 8 operations in flight.
    RawQd8,
    /// The engine's legacy queue.
    Legacy,
    /// The engine's direct path.
    Direct,
}

impl Mode {
    /// Every mode, in the order runs are interleaved.
    pub const ALL: [Mode; 4] = [Mode::Raw, Mode::RawQd8, Mode::Legacy, Mode::Direct];

    /// The name on the command line and in tables.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Raw => "raw",
            Mode::RawQd8 => "raw-qd8",
            Mode::Legacy => "legacy",
            Mode::Direct => "direct",
        }
    }

    /// The key in JSON.
    pub fn key(self) -> &'static str {
        match self {
            Mode::Raw => "raw",
            Mode::RawQd8 => "raw_qd8",
            Mode::Legacy => "legacy",
            Mode::Direct => "direct",
        }
    }

    /// Parses a name.
    pub fn parse(name: &str) -> Option<Mode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == name || m.key() == name)
    }
}

/// Builds the engine-backed target of a mode (`legacy`, `direct`), or `None` when the engine
/// cannot serve that mode.
pub type EngineFactory = fn(Mode, &Arc<StdHost>) -> Option<Box<dyn Target>>;

/// The factory used until the engine is plugged in: no engine modes.
pub fn no_engine(_mode: Mode, _host: &Arc<StdHost>) -> Option<Box<dyn Target>> {
    None
}

/// The host device as a target.
pub struct RawTarget<H: HostDevice> {
    host: Arc<H>,
}

impl<H: HostDevice> RawTarget<H> {
    /// A target over `host`.
    pub fn new(host: Arc<H>) -> Self {
        RawTarget { host }
    }
}

impl<H: HostDevice> Target for RawTarget<H> {
    fn size(&self) -> u64 {
        self.host.size()
    }
    fn alignment(&self) -> usize {
        (self.host.limits().alignment_mask as usize + 1).max(512)
    }
    fn read(&self, offset: u64, buf: &mut Buf) -> Result<usize, Status> {
        self.host.read(offset, buf.as_mut_slice())
    }
    fn write(&self, offset: u64, buf: &mut Buf) -> Result<usize, Status> {
        self.host.write(offset, buf.as_slice())
    }
}

/// A counting gate: at most `limit` holders at once.
pub struct Gate {
    limit: usize,
    held: Mutex<usize>,
    cv: Condvar,
}

impl Gate {
    /// A gate of `limit` places (at least one).
    pub fn new(limit: usize) -> Self {
        Gate {
            limit: limit.max(1),
            held: Mutex::new(0),
            cv: Condvar::new(),
        }
    }

    /// Runs `f` holding one place.
    pub fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            while *held >= self.limit {
                held = self.cv.wait(held).unwrap_or_else(|e| e.into_inner());
            }
            *held += 1;
        }
        let r = f();
        *self.held.lock().unwrap_or_else(|e| e.into_inner()) -= 1;
        self.cv.notify_one();
        r
    }
}

/// A target behind a [`Gate`].
pub struct GatedTarget<T: Target> {
    inner: T,
    gate: Gate,
}

impl<T: Target> GatedTarget<T> {
    /// `inner` with at most `limit` operations in flight.
    pub fn new(inner: T, limit: usize) -> Self {
        GatedTarget {
            inner,
            gate: Gate::new(limit),
        }
    }
}

impl<T: Target> Target for GatedTarget<T> {
    fn size(&self) -> u64 {
        self.inner.size()
    }
    fn alignment(&self) -> usize {
        self.inner.alignment()
    }
    fn read(&self, offset: u64, buf: &mut Buf) -> Result<usize, Status> {
        self.gate.with(|| self.inner.read(offset, buf))
    }
    fn write(&self, offset: u64, buf: &mut Buf) -> Result<usize, Status> {
        self.gate.with(|| self.inner.write(offset, buf))
    }
}

/// The target of `mode` over `host`, or `None` when the mode is not available.
pub fn target_for(
    mode: Mode,
    host: &Arc<StdHost>,
    engine: EngineFactory,
) -> Option<Box<dyn Target>> {
    match mode {
        Mode::Raw => Some(Box::new(RawTarget::new(Arc::clone(host)))),
        Mode::RawQd8 => Some(Box::new(GatedTarget::new(
            RawTarget::new(Arc::clone(host)),
            8,
        ))),
        Mode::Legacy | Mode::Direct => engine(mode, host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn gate_never_lets_more_than_its_limit_in() {
        let gate = Gate::new(3);
        let inside = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..12 {
                s.spawn(|| {
                    for _ in 0..50 {
                        gate.with(|| {
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            peak.fetch_max(now, Ordering::SeqCst);
                            std::thread::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                        });
                    }
                });
            }
        });
        assert!(peak.load(Ordering::SeqCst) <= 3);
        assert!(peak.load(Ordering::SeqCst) >= 1);
    }

    #[test]
    fn modes_parse_by_name_and_key_and_engine_modes_are_absent_without_engine() {
        assert_eq!(Mode::parse("raw-qd8"), Some(Mode::RawQd8));
        assert_eq!(Mode::parse("raw_qd8"), Some(Mode::RawQd8));
        assert_eq!(Mode::parse("fast"), None);
        let host = Arc::new(StdHost::from_spec("memory:1M", 0).unwrap());
        assert!(target_for(Mode::Raw, &host, no_engine).is_some());
        assert!(target_for(Mode::RawQd8, &host, no_engine).is_some());
        assert!(target_for(Mode::Direct, &host, no_engine).is_none());
    }
}
