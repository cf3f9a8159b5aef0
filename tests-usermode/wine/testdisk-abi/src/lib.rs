//! Control ABI of the Wine end-to-end test disk driver (`vctestdisk.sys`).
//!
//! Owns: the private IOCTL codes of the control device (`\\.\VcTestDiskCtl`), the byte layout
//! of the fault request, the counter indices, and the registry value names of the service key.
//! Never: talks to a device (the driver and the test client do). Test-only: nothing here ships.
#![no_std]

/// Service (and driver object) name: vcdirect's Wine build finds `\Driver\vctestdisk`.
pub const SERVICE: &str = "vctestdisk";
/// The disk device, `\Device\VcTestDisk0`; its symbolic link for tests is `\\.\VcTestDisk0`.
pub const DISK_DEVICE: &str = r"\Device\VcTestDisk0";
/// User-mode path of the disk (a test-only symbolic link; a real disk has none).
pub const DISK_PATH: &str = r"\\.\VcTestDisk0";
/// User-mode path of the control device.
pub const CONTROL_PATH: &str = r"\\.\VcTestDiskCtl";

/// Registry value (REG_SZ or REG_EXPAND_SZ, NT path such as `\??\C:\disk.img`): backing file.
pub const REG_BACKING_FILE: &str = "BackingFile";
/// Registry value (REG_DWORD, microseconds, default 0): added latency per read/write/flush.
pub const REG_LATENCY_US: &str = "LatencyUs";
/// Registry value (REG_DWORD, bytes, default 131072): largest transfer the disk accepts.
pub const REG_MAX_TRANSFER: &str = "MaxTransferBytes";
/// Registry value (REG_DWORD, default max-transfer / 4096 + 1): most pages one buffer spans.
pub const REG_MAX_PAGES: &str = "MaxPhysicalPages";
/// Registry value (REG_DWORD, default 0): buffer addresses must have these bits clear.
pub const REG_ALIGNMENT_MASK: &str = "AlignmentMask";

/// Default maximum transfer length in bytes.
pub const DEFAULT_MAX_TRANSFER: u32 = 128 * 1024;
/// Sector size of the test disk.
pub const SECTOR: u32 = 512;
/// Page size used for the physical-pages limit.
pub const PAGE: u64 = 4096;

/// Device type of the control device (a vendor type, >= 0x8000).
pub const FILE_DEVICE_VCTESTDISK: u32 = 0x8000;

const fn ctl(function: u32) -> u32 {
    // CTL_CODE(device, function, METHOD_BUFFERED, FILE_ANY_ACCESS)
    (FILE_DEVICE_VCTESTDISK << 16) | (function << 2)
}

/// Add a fault: input [`Fault`] ([`Fault::SIZE`] bytes). Up to [`MAX_FAULTS`] at once.
pub const IOCTL_SET_FAULT: u32 = ctl(0x800);
/// Remove every fault. No input.
pub const IOCTL_CLEAR_FAULTS: u32 = ctl(0x801);
/// Read the counters: output `[u64; COUNTERS]` little-endian.
pub const IOCTL_COUNTERS: u32 = ctl(0x802);
/// Set the latency: input u32 microseconds.
pub const IOCTL_SET_LATENCY: u32 = ctl(0x803);
/// Zero the event counters (reads, writes, bytes, faults hit, violations, max in flight).
pub const IOCTL_RESET_COUNTERS: u32 = ctl(0x804);
/// Write protection: input u32, 1 on, 0 off. While on, IOCTL_DISK_IS_WRITABLE answers
/// STATUS_MEDIA_WRITE_PROTECTED and writes fail with it (as a write-protected disk's do).
pub const IOCTL_SET_WRITE_PROTECTED: u32 = ctl(0x805);

/// The disk device's DeviceType: input u32, a FILE_DEVICE_* value (FILE_DEVICE_DISK, 7, at
/// load). Another type makes the disk look like a host no volume may live on (a named pipe,
/// 0x11), which vcdirect's Wine build must refuse at mount (W11, `host_type_*`).
pub const IOCTL_SET_DEVICE_TYPE: u32 = ctl(0x806);

/// Most faults active at once.
pub const MAX_FAULTS: usize = 8;
/// Fault applies to reads.
pub const FAULT_READ: u32 = 1;
/// Fault applies to writes.
pub const FAULT_WRITE: u32 = 2;

/// Fail every I/O of the selected kinds that touches `[offset, offset + length)` with `status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    /// First byte of the range.
    pub offset: u64,
    /// Bytes in the range (> 0).
    pub length: u64,
    /// NTSTATUS to complete with (an error: bit 31 set).
    pub status: u32,
    /// [`FAULT_READ`] | [`FAULT_WRITE`].
    pub ops: u32,
}

impl Fault {
    /// Encoded size: offset u64, length u64, status u32, ops u32.
    pub const SIZE: usize = 24;

    /// Little-endian encoding.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[0..8].copy_from_slice(&self.offset.to_le_bytes());
        out[8..16].copy_from_slice(&self.length.to_le_bytes());
        out[16..20].copy_from_slice(&self.status.to_le_bytes());
        out[20..24].copy_from_slice(&self.ops.to_le_bytes());
        out
    }

    /// Strict decoding: exact size, non-empty non-overflowing range, error status, known ops.
    pub fn decode(buf: &[u8]) -> Option<Fault> {
        let bytes: &[u8; Self::SIZE] = buf.try_into().ok()?;
        let u64_at = |o: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[o..o + 8]);
            u64::from_le_bytes(b)
        };
        let u32_at = |o: usize| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[o..o + 4]);
            u32::from_le_bytes(b)
        };
        let f = Fault {
            offset: u64_at(0),
            length: u64_at(8),
            status: u32_at(16),
            ops: u32_at(20),
        };
        let valid = f.length > 0
            && f.offset.checked_add(f.length).is_some()
            && f.status & 0x8000_0000 != 0
            && f.ops != 0
            && f.ops & !(FAULT_READ | FAULT_WRITE) == 0;
        valid.then_some(f)
    }

    /// Whether an I/O of kind `op` over `[offset, offset + length)` hits this fault.
    pub fn hits(&self, op: u32, offset: u64, length: u64) -> bool {
        self.ops & op != 0
            && length > 0
            && offset < self.offset.saturating_add(self.length)
            && self.offset < offset.saturating_add(length)
    }
}

/// Counter indices in the [`IOCTL_COUNTERS`] reply.
pub mod counter {
    /// Reads completed (any status).
    pub const READS: usize = 0;
    /// Writes completed (any status).
    pub const WRITES: usize = 1;
    /// Flushes completed.
    pub const FLUSHES: usize = 2;
    /// Bytes read successfully.
    pub const BYTES_READ: usize = 3;
    /// Bytes written successfully.
    pub const BYTES_WRITTEN: usize = 4;
    /// Requests pended and not yet completed, now.
    pub const IN_FLIGHT: usize = 5;
    /// Most requests pended at once since the last reset.
    pub const MAX_IN_FLIGHT: usize = 6;
    /// Requests failed by an injected fault.
    pub const FAULTS_HIT: usize = 7;
    /// Requests refused for breaking a limit (length, sector alignment, buffer alignment, pages).
    pub const LIMIT_VIOLATIONS: usize = 8;
    /// Largest read/write length seen.
    pub const MAX_LENGTH_SEEN: usize = 9;
    /// Requests refused because the queue was full.
    pub const QUEUE_FULL: usize = 10;
    /// Current latency in microseconds.
    pub const LATENCY_US: usize = 11;
    /// Configured maximum transfer length.
    pub const MAX_TRANSFER: usize = 12;
    /// Disk length in bytes.
    pub const DISK_BYTES: usize = 13;
    /// Requests that had no usable buffer (no MDL or no system address).
    pub const NO_BUFFER: usize = 14;
    /// Reads and writes without IRP_NOCACHE (a disk class driver's requests carry it).
    pub const NO_CACHE_MISSING: usize = 15;
    /// Reads and writes whose MDL disagrees with the request: ByteCount is not the length,
    /// StartVa is not page aligned, ByteOffset is not the page offset of the system address,
    /// or Size cannot hold the page frame numbers of the span.
    pub const MDL_MISMATCH: usize = 16;
    /// Reads and writes whose MDL is a partial MDL (MDL_PARTIAL: built from the upper MDL).
    pub const PARTIAL_MDL: usize = 17;
    /// Reads and writes with IRP_PAGING_IO.
    pub const PAGING_IO: usize = 18;
    /// Reads and writes with an MDL (any kind).
    pub const WITH_MDL: usize = 19;
}
/// Number of counters in the reply.
pub const COUNTERS: usize = 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fault_round_trips_and_rejects_bad_input() {
        let f = Fault {
            offset: 4096,
            length: 512,
            status: 0xC000_0185,
            ops: FAULT_READ,
        };
        assert_eq!(Fault::decode(&f.encode()), Some(f));
        assert_eq!(Fault::decode(&f.encode()[..23]), None);
        for bad in [
            Fault { length: 0, ..f },
            Fault { status: 0, ..f },
            Fault { ops: 4, ..f },
            Fault {
                offset: u64::MAX,
                ..f
            },
        ] {
            assert_eq!(Fault::decode(&bad.encode()), None, "{bad:?}");
        }
    }

    #[test]
    fn fault_hits_only_overlapping_ranges_of_its_kind() {
        let f = Fault {
            offset: 4096,
            length: 512,
            status: 0xC000_0185,
            ops: FAULT_WRITE,
        };
        assert!(f.hits(FAULT_WRITE, 4096 + 511, 1));
        assert!(f.hits(FAULT_WRITE, 0, 8192));
        assert!(!f.hits(FAULT_WRITE, 4608, 512));
        assert!(!f.hits(FAULT_WRITE, 3584, 512));
        assert!(!f.hits(FAULT_READ, 4096, 512));
    }
}
