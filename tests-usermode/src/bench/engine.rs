//! The engine as a benchmark target: a volume mounted on the host with the gates off
//! (`legacy`) or both on (`direct`), driven with real upper requests through the std platform.

use std::sync::{Arc, Condvar, Mutex};

use vcdirect::platform::HostDevice;
use vcdirect::registry::{Gates, Tunables};
use vcdirect::volume::{MountParams, Volume};
use vcdirect::Status;

use super::target::{Mode, Target};
use crate::host::StdHost;
use crate::request::{Buf, Completion, TestRequest};
use crate::std_platform::StdPlatform;

type Platform = StdPlatform<Arc<StdHost>>;

/// Where the data area starts on the host, as in a VeraCrypt volume (headers before it).
const DATA_OFFSET: u64 = 128 * 1024;

/// Engine buffer bytes (`Volume::memory().total()`) of the volume each engine mode mounted
/// last: legacy, direct.
static VOLUME_MEMORY: Mutex<[Option<u64>; 2]> = Mutex::new([None, None]);

fn memory_slot(mode: Mode) -> Option<usize> {
    match mode {
        Mode::Legacy => Some(0),
        Mode::Direct => Some(1),
        Mode::Raw | Mode::RawQd8 => None,
    }
}

/// Adds `volume_memory_bytes` to each mode's medians in the `summary` JSON: the nonpaged
/// bytes the volume that mode mounted held (null for a mode that mounts no volume).
pub fn add_volume_memory(summary: &mut serde_json::Value) {
    let held = *VOLUME_MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    for profile in summary.as_array_mut().into_iter().flatten() {
        for mode in Mode::ALL {
            if let Some(medians) = profile["median"][mode.key()].as_object_mut() {
                let bytes = memory_slot(mode).and_then(|i| held[i]);
                medians.insert("volume_memory_bytes".into(), bytes.into());
            }
        }
    }
}

/// A mounted volume as a target.
pub struct EngineTarget {
    volume: Arc<Volume<Platform>>,
}

/// Builds the `legacy` (gates off) or `direct` (both gates on) target over `host`.
pub fn engine_factory(mode: Mode, host: &Arc<StdHost>) -> Option<Box<dyn Target>> {
    let gates = match mode {
        Mode::Legacy => Gates::default(),
        Mode::Direct => Gates {
            read: true,
            write: true,
        },
        Mode::Raw | Mode::RawQd8 => return None,
    };
    let size = host.size();
    // The data area, with room for the backup headers at the end, in whole 4 KiB.
    let data_size = size.checked_sub(2 * DATA_OFFSET)? / 4096 * 4096;
    let params = MountParams {
        data_offset: DATA_OFFSET,
        data_size,
        sector_size: 512,
        read_only: false,
        hidden: false,
        protected_range: None,
        gates,
        tunables: Tunables::default(),
    };
    let key: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0x5a);
    let volume = Volume::mount(StdPlatform::new(0), Arc::clone(host), &key, params).ok()?;
    if let Some(i) = memory_slot(mode) {
        VOLUME_MEMORY.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(volume.memory().total());
    }
    Some(Box::new(EngineTarget { volume }))
}

impl EngineTarget {
    fn call(
        &self,
        request: impl FnOnce(Box<dyn FnOnce(Completion) + Send>) -> TestRequest,
        buf: &mut Buf,
    ) -> Result<usize, Status> {
        let slot = Arc::new((Mutex::new(None::<Completion>), Condvar::new()));
        let s2 = Arc::clone(&slot);
        let req = request(Box::new(move |c| {
            *s2.0.lock().unwrap() = Some(c);
            s2.1.notify_one();
        }));
        self.volume.dispatch(req);
        let mut g = slot.0.lock().unwrap();
        while g.is_none() {
            g = slot.1.wait(g).unwrap();
        }
        let c = g.take().expect("completed");
        if let Some(b) = c.buf {
            *buf = b;
        }
        if c.status.is_success() {
            Ok(c.information)
        } else {
            Err(c.status)
        }
    }
}

impl Target for EngineTarget {
    fn size(&self) -> u64 {
        self.volume.size()
    }
    fn alignment(&self) -> usize {
        (self.volume.host().limits().alignment_mask as usize + 1).max(4096)
    }
    fn read(&self, offset: u64, buf: &mut Buf) -> Result<usize, Status> {
        let len = buf.as_slice().len() as u32;
        let owned = std::mem::replace(buf, Buf::zeroed_aligned(0, 1));
        self.call(
            |done| {
                TestRequest::new(
                    vcdirect::platform::RequestKind::Read,
                    offset as i64,
                    len,
                    Some(owned),
                    done,
                )
            },
            buf,
        )
    }
    fn write(&self, offset: u64, buf: &mut Buf) -> Result<usize, Status> {
        let len = buf.as_slice().len() as u32;
        let owned = std::mem::replace(buf, Buf::zeroed_aligned(0, 1));
        self.call(
            |done| {
                TestRequest::new(
                    vcdirect::platform::RequestKind::Write,
                    offset as i64,
                    len,
                    Some(owned),
                    done,
                )
            },
            buf,
        )
    }
    fn counters(&self) -> Option<serde_json::Value> {
        let c = self.volume.counters.snapshot();
        let mut m = serde_json::Map::new();
        for (k, v) in c.fields() {
            m.insert(k.into(), v.into());
        }
        let reasons: serde_json::Map<String, serde_json::Value> =
            vcdirect::volume::LegacyReason::ALL
                .iter()
                .zip(c.legacy_by_reason)
                .map(|(r, n)| (r.name().to_string(), n.into()))
                .collect();
        m.insert("legacy_by_reason".into(), reasons.into());
        m.insert("crypto_backend".into(), vcdirect::crypto::backend().into());
        Some(m.into())
    }
}

impl Drop for EngineTarget {
    fn drop(&mut self) {
        self.volume.dismount();
    }
}
