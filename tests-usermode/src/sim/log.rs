//! The request log the workload records and the checkers replay: what each request asked, how
//! it ended, and the sector pattern that names the write a sector came from.

use vcdirect::Status;

pub(super) const SECTOR: u64 = 512;
pub(super) const DATA_OFFSET: u64 = 128 * 1024;
pub(super) const DATA_SECTORS: u64 = 2048;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum OpKind {
    Read,
    Write,
    Flush,
}

pub(super) struct Outcome {
    pub(super) status: Status,
    pub(super) information: usize,
    pub(super) data: Option<Vec<u8>>,
}

pub(super) struct LogEntry {
    pub(super) kind: OpKind,
    pub(super) first_sector: u64,
    pub(super) sectors: u64,
    pub(super) id: u32,
    /// For a malformed request: the status it must get.
    pub(super) expected: Option<Status>,
    /// Its cancel routine ran (it was still queued): it must end cancelled, nothing issued.
    pub(super) routine_ran: bool,
    /// Its buffer cannot be mapped (W7): it must fail, with nothing issued.
    pub(super) unmappable: bool,
    pub(super) outcome: Option<Outcome>,
}

impl LogEntry {
    /// A failed write that cannot have put any of its sectors on the medium.
    pub(super) fn wrote_nothing(&self, o: &Outcome) -> bool {
        NOTHING_WRITTEN.contains(&o.status) || self.routine_ran || self.unmappable
    }
}

/// Statuses with which a write cannot have put any sector on the medium.
pub(super) const NOTHING_WRITTEN: [Status; 4] = [
    Status::InvalidParameter,
    Status::MediaWriteProtected,
    Status::InvalidUserBuffer,
    Status::DeviceNotReady,
];

/// Sector pattern of write `id` at volume sector `sector`.
pub(super) fn fill_pattern(id: u32, first_sector: u64, buf: &mut [u8]) {
    for (i, sec) in buf.chunks_mut(SECTOR as usize).enumerate() {
        let s = first_sector + i as u64;
        sec[..4].copy_from_slice(&id.to_le_bytes());
        sec[4..12].copy_from_slice(&s.to_le_bytes());
        let mut x = (u64::from(id) << 32) ^ s ^ 0x9E37_79B9_7F4A_7C15;
        for chunk in sec[12..].chunks_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let b = x.to_le_bytes();
            chunk.copy_from_slice(&b[..chunk.len()]);
        }
    }
}

/// The write id a sector's plaintext carries, if it is an intact pattern for `sector`.
pub(super) fn decode_sector(sec: &[u8], sector: u64) -> Option<u32> {
    let id = u32::from_le_bytes(sec[..4].try_into().ok()?);
    let mut expect = [0u8; SECTOR as usize];
    fill_pattern(id, sector, &mut expect);
    (expect[..] == sec[..SECTOR as usize]).then_some(id)
}
