//! The engine as a benchmark target: a volume mounted on the host with the gates off
//! (`legacy`) or both on (`direct`; `direct-workers`, every request waited for by a worker;
//! `direct-system`, driven from threads that stand for the System process's), driven with real upper requests through the std platform.

use std::sync::{Arc, Mutex};

use vcdirect::platform::{HostDevice, RequestKind};
use vcdirect::registry::Gates;
use vcdirect::volume::Volume;

use super::target::{Mode, Op, Target};
use crate::host::StdHost;
use crate::mount::mount_params;
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
        Mode::Direct | Mode::DirectWorkers | Mode::DirectSystem => Some(1),
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
    /// The submitting threads stand for System threads (`direct-system`).
    system: bool,
}

/// Builds the `legacy` (gates off) or `direct` (both gates on) target over `host`.
pub fn engine_factory(mode: Mode, host: &Arc<StdHost>) -> Option<Box<dyn Target>> {
    let gates = match mode {
        Mode::Legacy => Gates::default(),
        Mode::Direct | Mode::DirectWorkers | Mode::DirectSystem => Gates {
            read: true,
            write: true,
        },
        Mode::Raw | Mode::RawQd8 => return None,
    };
    let size = host.size();
    // The data area, with room for the backup headers at the end, in whole 4 KiB.
    let data_size = size.checked_sub(2 * DATA_OFFSET)? / 4096 * 4096;
    let params = mount_params(DATA_OFFSET, data_size, gates);
    let key: [u8; 64] = core::array::from_fn(|i| (i as u8).wrapping_mul(37) ^ 0x5a);
    let platform = match mode {
        Mode::DirectWorkers => StdPlatform::new(0).without_detached(),
        _ => StdPlatform::new(0),
    };
    let volume = Volume::mount(platform, Arc::clone(host), &key, params).ok()?;
    if let Some(i) = memory_slot(mode) {
        VOLUME_MEMORY.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(volume.memory().total());
    }
    Some(Box::new(EngineTarget {
        volume,
        system: mode == Mode::DirectSystem,
    }))
}

impl Target for EngineTarget {
    fn size(&self) -> u64 {
        self.volume.size()
    }
    fn alignment(&self) -> usize {
        (self.volume.host().limits().alignment_mask as usize + 1).max(4096)
    }
    fn submit(&self, op: Op) {
        let Op {
            write,
            offset,
            buf,
            tag,
            queue,
            // Every request goes through dispatch, lone or not (the engine's own threads).
            alone: _,
        } = op;
        let kind = if write {
            RequestKind::Write
        } else {
            RequestKind::Read
        };
        let len = buf.as_slice().len() as u32;
        if self.system {
            crate::security::set_caller(crate::security::Caller::System);
        }
        // The upper completion pushes straight to the issuing generator thread's queue. Read
        // and write dispatch run at PASSIVE_LEVEL, as an application's requests reach a volume
        // through its file system (W9 checks every call against it).
        crate::irql::dispatch_at(
            vcdirect::platform::irql::Irql::Passive,
            &self.volume,
            TestRequest::new(kind, offset as i64, len, Some(buf), move |c: Completion| {
                let result = if c.status.is_success() {
                    Ok(c.information)
                } else {
                    Err(c.status)
                };
                let buf = c
                    .buf
                    .unwrap_or_else(|| Buf::zeroed_aligned(len as usize, 4096));
                Op::finish(&queue, tag, result, buf);
            }),
        );
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
