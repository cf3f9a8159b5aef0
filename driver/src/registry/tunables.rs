//! VeraCrypt's legacy queue tunables: strict reading and VeraCrypt 1.26's clamps (docs/design.md §4).
//!
//! VeraCrypt reads these once at driver load; a value that is absent counts as 0, and each
//! clamp turns 0 into the default. A malformed value (not REG_DWORD, or not exactly 4 bytes) is
//! ignored, so it also counts as 0, and a note says why.
//!
//! VeraCrypt keeps the values in C `int`s. Where that gives a usable number we match it (a
//! request count of 0x80000000 or more is negative there and clamps up to 16). Where it gives
//! an unusable one we deliberately do not: a negative item count or work-item count, or a
//! fragment size whose KiB-to-bytes product wraps, are kept by VeraCrypt; here an item count
//! above requests/2 is requests/2 whatever its sign bit, and any fragment size above 2048 KiB
//! is 2048 KiB.

use super::names::{
    FRAGMENT_SIZE_VALUE, FREE_CPU_COUNT_VALUE, IO_REQUEST_COUNT_VALUE, ITEM_COUNT_VALUE,
    MAX_WORK_ITEMS_VALUE,
};
use super::parse::{read_dword, Malformed, RawValue};
use super::Tunables;

/// Smallest request pool (VeraCrypt's preallocated request count).
pub const MIN_IO_REQUEST_COUNT: u32 = 16;
/// Largest request pool.
pub const MAX_IO_REQUEST_COUNT: u32 = 8192;
/// Fragment size when the value is 0 or absent, in KiB.
pub const DEFAULT_FRAGMENT_KIB: u32 = 256;
/// Largest fragment size, in KiB.
pub const MAX_FRAGMENT_KIB: u32 = 2048;
/// Work items when the value is 0 or absent.
pub const DEFAULT_MAX_WORK_ITEMS: u32 = 1024;
/// Most work items (each volume allocates this many at mount, W6): VeraCrypt keeps any value.
pub const MAX_MAX_WORK_ITEMS: u32 = 8192;

/// One of VeraCrypt's legacy tunables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tunable {
    /// `VeraCryptEncryptionFragmentSize`, in KiB.
    FragmentSize,
    /// `VeraCryptEncryptionIoRequestCount`.
    IoRequestCount,
    /// `VeraCryptEncryptionItemCount`.
    ItemCount,
    /// `VeraCryptEncryptionFreeCpuCount`.
    FreeCpuCount,
    /// `VeraCryptEncryptionMaxWorkItems`.
    MaxWorkItems,
}

impl Tunable {
    /// Every tunable.
    pub const ALL: [Tunable; 5] = [
        Tunable::FragmentSize,
        Tunable::IoRequestCount,
        Tunable::ItemCount,
        Tunable::FreeCpuCount,
        Tunable::MaxWorkItems,
    ];

    /// The registry value name of this tunable.
    pub const fn value_name(self) -> &'static str {
        match self {
            Tunable::FragmentSize => FRAGMENT_SIZE_VALUE,
            Tunable::IoRequestCount => IO_REQUEST_COUNT_VALUE,
            Tunable::ItemCount => ITEM_COUNT_VALUE,
            Tunable::FreeCpuCount => FREE_CPU_COUNT_VALUE,
            Tunable::MaxWorkItems => MAX_WORK_ITEMS_VALUE,
        }
    }
}

/// The DWORDs as read, before clamping; 0 where absent or ignored (as VeraCrypt's globals).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawTunables {
    /// Fragment size in KiB.
    pub fragment_kib: u32,
    /// Request pool size.
    pub io_request_count: u32,
    /// Item pool size.
    pub item_count: u32,
    /// Free CPU count.
    pub free_cpu_count: u32,
    /// Work item count.
    pub max_work_items: u32,
}

impl RawTunables {
    /// Stores the DWORD read for `tunable`.
    pub fn set(&mut self, tunable: Tunable, value: u32) {
        match tunable {
            Tunable::FragmentSize => self.fragment_kib = value,
            Tunable::IoRequestCount => self.io_request_count = value,
            Tunable::ItemCount => self.item_count = value,
            Tunable::FreeCpuCount => self.free_cpu_count = value,
            Tunable::MaxWorkItems => self.max_work_items = value,
        }
    }
}

/// Reads one tunable strictly: `Ok(None)` when absent, `Err` when malformed (then ignored).
pub fn read_tunable(raw: Option<RawValue<'_>>) -> Result<Option<u32>, Malformed> {
    raw.map(read_dword).transpose()
}

/// VeraCrypt's request-count clamp, with its signed reading: below 16 (or negative) is 16,
/// above 8192 is 8192.
pub const fn clamp_io_request_count(raw: u32) -> u32 {
    let signed = raw as i32;
    if signed < MIN_IO_REQUEST_COUNT as i32 {
        MIN_IO_REQUEST_COUNT
    } else if signed > MAX_IO_REQUEST_COUNT as i32 {
        MAX_IO_REQUEST_COUNT
    } else {
        raw
    }
}

/// Item count: 0, or above half the (clamped) request count, is half the request count.
pub const fn clamp_item_count(raw: u32, io_request_count: u32) -> u32 {
    let half = io_request_count / 2;
    if raw == 0 || raw > half {
        half
    } else {
        raw
    }
}

/// Fragment size in bytes from KiB: 0 is 256 KiB, above 2048 KiB is 2048 KiB.
pub const fn clamp_fragment_size(raw_kib: u32) -> u32 {
    let kib = if raw_kib == 0 {
        DEFAULT_FRAGMENT_KIB
    } else if raw_kib > MAX_FRAGMENT_KIB {
        MAX_FRAGMENT_KIB
    } else {
        raw_kib
    };
    kib * 1024
}

/// Work items: 0 is 1024, above 8192 is 8192 (every volume allocates them at mount, so a
/// huge value must not make a mount try to allocate gigabytes; VeraCrypt keeps any value).
pub const fn clamp_max_work_items(raw: u32) -> u32 {
    if raw == 0 {
        DEFAULT_MAX_WORK_ITEMS
    } else if raw > MAX_MAX_WORK_ITEMS {
        MAX_MAX_WORK_ITEMS
    } else {
        raw
    }
}

impl Tunables {
    /// Applies VeraCrypt's clamps to the raw DWORDs.
    pub const fn clamp(raw: RawTunables) -> Tunables {
        let io_request_count = clamp_io_request_count(raw.io_request_count);
        Tunables {
            fragment_size: clamp_fragment_size(raw.fragment_kib),
            io_request_count,
            item_count: clamp_item_count(raw.item_count, io_request_count),
            free_cpu_count: raw.free_cpu_count,
            max_work_items: clamp_max_work_items(raw.max_work_items),
        }
    }

    /// The value of `tunable` after clamping, in the registry's unit (fragment size in KiB).
    pub const fn registry_units(&self, tunable: Tunable) -> u32 {
        match tunable {
            Tunable::FragmentSize => self.fragment_size / 1024,
            Tunable::IoRequestCount => self.io_request_count,
            Tunable::ItemCount => self.item_count,
            Tunable::FreeCpuCount => self.free_cpu_count,
            Tunable::MaxWorkItems => self.max_work_items,
        }
    }
}
