//! Registry values: the two direct-path gates and VeraCrypt's legacy tunables.
//!
//! Owns: every registry value name (defined once, docs/review.md R5), their strict parsing (R8),
//! VeraCrypt's clamps, the snapshot semantics of the gates (R6) and the rule for when a volume
//! is direct-read or direct-write configured (R7).
//! Never: reads the registry itself (the `wdm` glue does, with ZwQueryValueKey, and hands the
//! raw type and bytes to the parsers here through a [`RegistrySource`]), and never logs: it
//! returns [`Note`]s that the glue logs once per load or reload.
//! The volume takes [`GateStore::snapshot`] at mount and hands its [`Gates`] to the direct path.

mod config;
mod names;
mod parse;
mod store;
mod tunables;

#[cfg(test)]
mod tests;

use core::fmt;

pub use config::{Config, GateReading, Note, RegistrySource, ValueMap};
pub use names::{
    reg_type, ALL_VALUE_NAMES, ENABLE_READ_GATE_COMMAND, ENABLE_WRITE_GATE_COMMAND,
    FRAGMENT_SIZE_VALUE, FREE_CPU_COUNT_VALUE, IO_REQUEST_COUNT_VALUE, ITEM_COUNT_VALUE,
    MAX_WORK_ITEMS_VALUE, READ_GATE_VALUE, SERVICE_KEY, SERVICE_KEY_NT, SERVICE_NAME,
    WRITE_GATE_VALUE,
};
pub use parse::{
    parse_gate, read_dword, read_failure, Gate, GateState, Malformed, OffReason, RawValue,
};
pub use store::{GateStore, Reload, DRIVER_GATES};
pub use tunables::{
    clamp_fragment_size, clamp_io_request_count, clamp_item_count, clamp_max_work_items,
    read_tunable, RawTunables, Tunable, DEFAULT_FRAGMENT_KIB, DEFAULT_MAX_WORK_ITEMS,
    MAX_FRAGMENT_KIB, MAX_IO_REQUEST_COUNT, MAX_MAX_WORK_ITEMS, MIN_IO_REQUEST_COUNT,
};

/// The direct-path gates of one volume, copied at mount (docs/review.md R6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gates {
    /// `VeraCryptEnableMountedVolumeFastReadIo` was exactly REG_DWORD 1.
    pub read: bool,
    /// `VeraCryptEnableMountedVolumeFastWriteIo` was exactly REG_DWORD 1.
    pub write: bool,
}

impl Gates {
    /// Both gates off (the state before any load).
    pub const OFF: Gates = Gates {
        read: false,
        write: false,
    };

    /// Whether `gate` is on.
    pub const fn get(self, gate: Gate) -> bool {
        match gate {
            Gate::Read => self.read,
            Gate::Write => self.write,
        }
    }
}

/// `read=on write=off`, as `vcctl status` and the logs show it.
impl fmt::Display for Gates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = |on: bool| if on { "on" } else { "off" };
        write!(f, "read={} write={}", word(self.read), word(self.write))
    }
}

/// True only when reads of this volume can take the direct path: the volume's read gate is on
/// and its host is a raw partition or drive (file containers stay on the legacy queue).
pub const fn direct_read_configured(gates: Gates, raw_host: bool) -> bool {
    gates.read && raw_host
}

/// True only when writes of this volume can actually take the direct path (docs/review.md R7): the
/// volume's write gate is on, it is mounted writable, it is not a hidden volume, it is not an
/// outer volume mounted with hidden-volume protection, and its host is a raw partition or
/// drive. A volume for which this is false keeps exactly the legacy flush behaviour.
pub const fn direct_write_configured(
    gates: Gates,
    volume_writable: bool,
    hidden: bool,
    protect_hidden: bool,
    raw_host: bool,
) -> bool {
    gates.write && volume_writable && !hidden && !protect_hidden && raw_host
}

/// VeraCrypt's legacy queue tunables, after its clamps (docs/design.md §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunables {
    /// Fragment size in bytes (`VeraCryptEncryptionFragmentSize`, KiB in the registry).
    pub fragment_size: u32,
    /// Request pool size (`VeraCryptEncryptionIoRequestCount`).
    pub io_request_count: u32,
    /// Item pool size: upper requests in flight (`VeraCryptEncryptionItemCount`).
    pub item_count: u32,
    /// CPUs left free of encryption threads (`VeraCryptEncryptionFreeCpuCount`).
    pub free_cpu_count: u32,
    /// Work items for deferred completion (`VeraCryptEncryptionMaxWorkItems`).
    pub max_work_items: u32,
}

impl Default for Tunables {
    fn default() -> Self {
        Tunables {
            fragment_size: 256 * 1024,
            io_request_count: 16,
            item_count: 8,
            free_cpu_count: 0,
            max_work_items: 1024,
        }
    }
}
