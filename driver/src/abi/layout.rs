//! The request and reply layouts, each with `build` (vcctl / driver replies) and `parse`.

use alloc::vec::Vec;
use zeroize::Zeroizing;

use super::{open_exact, AbiError, MasterKey, Reader, Writer};
use crate::crypto::{Algorithm, AES, MAX_KEY_AREA};
use crate::io::{CounterSnapshot, VolumeMemory};
pub use crate::namespace::LinkKind;

/// Key bytes for AES-256-XTS: primary key 0..32, tweak key 32..64 (the first layout's key
/// field; the extended layout carries up to [`MAX_KEY_AREA`]).
pub const KEY_LENGTH: usize = 64;
/// Where the extended layout's block starts: right after the first layout's end.
const OFF_EXTENSION: usize = MountRequest::SIZE;
/// UTF-16 code units in the host path field, terminator included.
pub const HOST_PATH_CHARS: usize = 512;
/// UTF-16 code units in the Wine host driver name field, terminator included.
pub const WINE_NAME_CHARS: usize = 64;
/// Most volumes one list reply carries.
pub const MAX_LIST_ENTRIES: usize = 64;

/// Mount flag: the volume refuses writes.
pub const MOUNT_READ_ONLY: u32 = 1 << 0;
/// Mount flag: open the host shared (default exclusive, share mode 0, like VeraCrypt).
pub const MOUNT_SHARED: u32 = 1 << 1;
/// Mount flag: this is a hidden volume.
pub const MOUNT_HIDDEN: u32 = 1 << 2;
/// Mount flag: outer volume with hidden-volume protection over the protected range.
pub const MOUNT_PROTECT_HIDDEN: u32 = 1 << 3;
const MOUNT_FLAGS: u32 = MOUNT_READ_ONLY | MOUNT_SHARED | MOUNT_HIDDEN | MOUNT_PROTECT_HIDDEN;

/// Dismount flag: dismount even if handles are open.
pub const DISMOUNT_FORCE: u32 = 1 << 0;

/// `IOCTL_MOUNT` input, [`MountRequest::SIZE`] bytes:
///
/// | offset | field | type |
/// |---|---|---|
/// | 0 | version | u32 |
/// | 4 | size | u32 |
/// | 8 | flags | u32 (`MOUNT_*`) |
/// | 12 | sector_size | u32 (512, 1024, 2048, 4096) |
/// | 16 | data_offset | u64 (host bytes, sector aligned) |
/// | 24 | data_size | u64 (bytes, sector aligned, > 0) |
/// | 32 | protected_offset | u64 (host bytes; 0 unless protect-hidden) |
/// | 40 | protected_size | u64 |
/// | 48 | drive_letter | u16 (0: none, else 'A'..='Z') |
/// | 50 | key_length | u16 (64; in the extended layout the algorithm's, 64, 128 or 192) |
/// | 52 | reserved | u32 (0) |
/// | 56 | key | [u8; 64]: master key bytes 0..64 |
/// | 120 | host_path | [u16; 512], NUL-terminated |
/// | 1144 | wine_host_driver_name | [u16; 64], NUL-terminated, empty outside the Wine build |
/// | 1272 | algorithm | u32, extended layout only: 2..=15 (`Algorithm::id`; AES, 1, is the first layout) |
/// | 1276 | reserved | u32 (0), extended layout only |
/// | 1280 | key_rest | [u8; 128], extended layout only: master key bytes 64..192, zero past key_length |
///
/// Two sizes, told apart by the buffer's length (and its `size` field): the first layout,
/// [`MountRequest::SIZE`] bytes, is an AES-256 mount (what every vcctl sends for AES, so an
/// older driver, which knows this size only, still mounts it); the extended layout,
/// [`MountRequest::SIZE_EXTENDED`] bytes, adds the algorithm and the rest of the key area
/// (VeraCrypt's layout: every cipher's primary key, then every cipher's secondary key). An
/// older driver refuses the extended size with STATUS_INFO_LENGTH_MISMATCH, which vcctl reports
/// as a driver too old for the cipher.
/// Holds the master key: deliberately neither `Debug` nor `Clone` (W5).
#[derive(PartialEq, Eq)]
pub struct MountRequest {
    /// `MOUNT_*` flags.
    pub flags: u32,
    /// Sector size in bytes.
    pub sector_size: u32,
    /// Start of the encrypted data area on the host, in bytes.
    pub data_offset: u64,
    /// Length of the data area in bytes.
    pub data_size: u64,
    /// Hidden-volume protection: host byte range `[offset, offset + size)` (zeros if off).
    pub protected_range: (u64, u64),
    /// Drive letter, upper case, or `None`.
    pub drive_letter: Option<char>,
    /// The encryption algorithm (AES in the first layout).
    pub algorithm: Algorithm,
    /// The master key area, exactly `algorithm.key_len()` bytes (zeroized on drop).
    pub key: MasterKey,
    /// Host path (UTF-16, no terminator).
    pub host_path: Vec<u16>,
    /// Wine test build only: the test disk driver's name (UTF-16, no terminator).
    pub wine_host_driver_name: Vec<u16>,
}

impl MountRequest {
    /// Exact byte size of the first layout (an AES mount).
    pub const SIZE: usize = 120 + 2 * HOST_PATH_CHARS + 2 * WINE_NAME_CHARS;
    /// Exact byte size of the extended layout (any algorithm).
    pub const SIZE_EXTENDED: usize = OFF_EXTENSION + 8 + (MAX_KEY_AREA - KEY_LENGTH);

    /// Encodes the request (vcctl side): the first layout for AES, the extended one for every
    /// other algorithm. Validates what `parse` would refuse.
    pub fn build(&self) -> Result<Zeroizing<Vec<u8>>, AbiError> {
        if self.key.len() != self.algorithm.key_len() {
            return Err(AbiError::BadKeyLength(self.key.len() as u16));
        }
        let extended = self.algorithm != AES
            || crate::faults::is_on(crate::faults::Fault::AbiAesRequestExtended);
        let mut w = Writer::new(match extended {
            false => Self::SIZE,
            true => Self::SIZE_EXTENDED,
        })?;
        w.u32(8, self.flags);
        w.u32(12, self.sector_size);
        w.u64(16, self.data_offset);
        w.u64(24, self.data_size);
        w.u64(32, self.protected_range.0);
        w.u64(40, self.protected_range.1);
        w.u16(
            48,
            self.drive_letter
                .map_or(0, |c| c.to_ascii_uppercase() as u16),
        );
        w.u16(50, self.key.len() as u16);
        let (first, rest) = self.key.split_at(KEY_LENGTH.min(self.key.len()));
        w.bytes(56, first);
        if extended {
            w.u32(OFF_EXTENSION, self.algorithm.id());
            w.bytes(OFF_EXTENSION + 8, rest);
        }
        w.utf16(120, HOST_PATH_CHARS, &self.host_path)?;
        w.utf16(
            120 + 2 * HOST_PATH_CHARS,
            WINE_NAME_CHARS,
            &self.wine_host_driver_name,
        )?;
        let bytes = Zeroizing::new(core::mem::take(&mut w.0));
        // The builder never emits what the parser refuses (the fault switch's extended AES
        // request is such a request: it is sent as built).
        if !extended || self.algorithm != AES {
            Self::parse(&bytes, !self.wine_host_driver_name.is_empty())?;
        }
        Ok(bytes)
    }

    /// Decodes and validates (driver side). `allow_wine_host` is true only in the Wine test
    /// build.
    pub fn parse(buf: &[u8], allow_wine_host: bool) -> Result<MountRequest, AbiError> {
        let extended = buf.len() == Self::SIZE_EXTENDED;
        let r = open_exact(
            buf,
            match extended {
                true => Self::SIZE_EXTENDED,
                false => Self::SIZE,
            },
        )?;
        let flags = r.u32(8);
        if flags & !MOUNT_FLAGS != 0 {
            return Err(AbiError::UnknownFlags(flags & !MOUNT_FLAGS));
        }
        if flags & MOUNT_HIDDEN != 0 && flags & MOUNT_PROTECT_HIDDEN != 0 {
            return Err(AbiError::ConflictingFlags);
        }
        let sector_size = r.u32(12);
        if !matches!(sector_size, 512 | 1024 | 2048 | 4096) {
            return Err(AbiError::BadSectorSize(sector_size));
        }
        let algorithm = match extended {
            false => AES,
            true => {
                let id = r.u32(OFF_EXTENSION);
                match Algorithm::from_id(id).ok_or(AbiError::UnknownAlgorithm(id))? {
                    // One layout per request: an AES mount is the first layout, so a parsed
                    // request always rebuilds to the bytes it came from.
                    AES => return Err(AbiError::AesInExtendedLayout),
                    algorithm => algorithm,
                }
            }
        };
        let key_length = r.u16(50);
        if key_length as usize != algorithm.key_len() {
            return Err(AbiError::BadKeyLength(key_length));
        }
        if r.u32(52) != 0 || (extended && r.u32(OFF_EXTENSION + 4) != 0) {
            return Err(AbiError::ReservedNotZero);
        }
        let rest = match extended {
            true => buf
                .get(OFF_EXTENSION + 8..Self::SIZE_EXTENDED)
                .unwrap_or_default(),
            false => &[],
        };
        let (rest_used, rest_unused) =
            rest.split_at((algorithm.key_len() - KEY_LENGTH).min(rest.len()));
        if rest_unused.iter().any(|b| *b != 0) {
            return Err(AbiError::KeyPaddingNotZero);
        }
        let ss = u64::from(sector_size);
        let (data_offset, data_size) = (r.u64(16), r.u64(24));
        if data_offset % ss != 0 || data_size % ss != 0 {
            return Err(AbiError::Misaligned);
        }
        let data_end = data_offset
            .checked_add(data_size)
            .filter(|_| data_size > 0)
            .ok_or(AbiError::BadRange)?;
        let protected_range = (r.u64(32), r.u64(40));
        if flags & MOUNT_PROTECT_HIDDEN != 0 {
            let (po, ps) = protected_range;
            if po % ss != 0 || ps % ss != 0 {
                return Err(AbiError::Misaligned);
            }
            match po.checked_add(ps) {
                Some(end) if ps > 0 && po >= data_offset && end <= data_end => {}
                _ => return Err(AbiError::BadRange),
            }
        } else if protected_range != (0, 0) {
            return Err(AbiError::BadRange);
        }
        let letter = r.u16(48);
        let drive_letter = match letter {
            0 => None,
            c if (u16::from(b'A')..=u16::from(b'Z')).contains(&c) => Some(char::from(c as u8)),
            c => return Err(AbiError::BadDriveLetter(c)),
        };
        let mut key = MasterKey::try_zeroed(algorithm.key_len())?;
        // The buffer's length is exactly one of the sizes (checked above), so the field is
        // there.
        let (first, more) = key.split_at_mut(KEY_LENGTH);
        first.copy_from_slice(buf.get(56..56 + KEY_LENGTH).ok_or(AbiError::WrongSize {
            expected: Self::SIZE,
            got: buf.len(),
        })?);
        if more.len() != rest_used.len() {
            return Err(AbiError::BadKeyLength(key_length));
        }
        more.copy_from_slice(rest_used);
        let host_path = r.utf16(120, HOST_PATH_CHARS)?;
        if host_path.is_empty() {
            return Err(AbiError::EmptyPath);
        }
        let wine_host_driver_name = r.utf16(120 + 2 * HOST_PATH_CHARS, WINE_NAME_CHARS)?;
        if !wine_host_driver_name.is_empty() && !allow_wine_host {
            return Err(AbiError::WineHostNotAllowed);
        }
        Ok(MountRequest {
            flags,
            sector_size,
            data_offset,
            data_size,
            protected_range,
            drive_letter,
            algorithm,
            key,
            host_path,
            wine_host_driver_name,
        })
    }
}

/// A volume named by drive letter or by the id the mount reply gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Drive letter 'A'..='Z'.
    Letter(char),
    /// Volume id (non-zero).
    Id(u32),
}

/// `IOCTL_DISMOUNT` and `IOCTL_STATUS` input, 20 bytes: version u32, size u32, flags u32
/// (`DISMOUNT_FORCE` for dismount, 0 for status), drive_letter u16 (0 or 'A'..='Z'),
/// reserved u16 (0), volume_id u32 (0 when a letter is given). Exactly one names the volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VolumeRequest {
    /// The volume.
    pub target: Target,
    /// `DISMOUNT_FORCE` or 0.
    pub flags: u32,
}

impl VolumeRequest {
    /// Exact byte size.
    pub const SIZE: usize = 20;

    /// Encodes the request.
    pub fn build(&self) -> Result<[u8; Self::SIZE], AbiError> {
        let mut w = Writer::<[u8; Self::SIZE]>::fixed();
        w.u32(8, self.flags);
        match self.target {
            Target::Letter(c) => w.u16(12, c.to_ascii_uppercase() as u16),
            Target::Id(id) => w.u32(16, id),
        }
        let bytes = w.0;
        Self::parse(&bytes)?;
        Ok(bytes)
    }

    /// Decodes and validates.
    pub fn parse(buf: &[u8]) -> Result<VolumeRequest, AbiError> {
        let r = open_exact(buf, Self::SIZE)?;
        let flags = r.u32(8);
        if flags & !DISMOUNT_FORCE != 0 {
            return Err(AbiError::UnknownFlags(flags & !DISMOUNT_FORCE));
        }
        if r.u16(14) != 0 {
            return Err(AbiError::ReservedNotZero);
        }
        let target = match (r.u16(12), r.u32(16)) {
            (0, 0) => return Err(AbiError::BadTarget),
            (0, id) => Target::Id(id),
            (c, 0) if (u16::from(b'A')..=u16::from(b'Z')).contains(&c) => {
                Target::Letter(char::from(c as u8))
            }
            (c, 0) => return Err(AbiError::BadDriveLetter(c)),
            _ => return Err(AbiError::BadTarget),
        };
        Ok(VolumeRequest { target, flags })
    }
}

/// Input of list, gates get/reload and erase keys: version u32, size u32 (8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EmptyRequest;

impl EmptyRequest {
    /// Exact byte size.
    pub const SIZE: usize = 8;

    /// Encodes the request.
    pub fn build() -> [u8; Self::SIZE] {
        Writer::<[u8; Self::SIZE]>::fixed().0
    }

    /// Validates.
    pub fn parse(buf: &[u8]) -> Result<EmptyRequest, AbiError> {
        open_exact(buf, Self::SIZE).map(|_| EmptyRequest)
    }
}

/// `IOCTL_MOUNT` output, 16 bytes: version u32, size u32, volume_id u32, drive_letter u16,
/// reserved u16.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MountReply {
    /// The id the driver gave the volume (non-zero).
    pub volume_id: u32,
    /// The letter assigned, if any.
    pub drive_letter: Option<char>,
}

fn letter_field(c: Option<char>) -> u16 {
    c.map_or(0, |c| c.to_ascii_uppercase() as u16)
}

fn parse_letter(c: u16) -> Result<Option<char>, AbiError> {
    match c {
        0 => Ok(None),
        c if (u16::from(b'A')..=u16::from(b'Z')).contains(&c) => Ok(Some(char::from(c as u8))),
        c => Err(AbiError::BadDriveLetter(c)),
    }
}

impl MountReply {
    /// Exact byte size.
    pub const SIZE: usize = 16;

    /// Encodes the reply (driver side).
    pub fn build(&self) -> [u8; Self::SIZE] {
        let mut w = Writer::<[u8; Self::SIZE]>::fixed();
        w.u32(8, self.volume_id);
        w.u16(12, letter_field(self.drive_letter));
        w.0
    }

    /// Decodes (vcctl side).
    pub fn parse(buf: &[u8]) -> Result<MountReply, AbiError> {
        let r = open_exact(buf, Self::SIZE)?;
        if r.u16(14) != 0 {
            return Err(AbiError::ReservedNotZero);
        }
        Ok(MountReply {
            volume_id: r.u32(8),
            drive_letter: parse_letter(r.u16(12))?,
        })
    }
}

/// Both direct-path gates, as `IOCTL_GATES_*` carry them: 16 bytes, version u32, size u32,
/// read u32 (0 or 1), write u32 (0 or 1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GatesMessage {
    /// Read gate.
    pub read: bool,
    /// Write gate.
    pub write: bool,
}

fn gate(v: u32) -> Result<bool, AbiError> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(AbiError::BadGateValue(v)),
    }
}

impl GatesMessage {
    /// Exact byte size.
    pub const SIZE: usize = 16;

    /// Encodes.
    pub fn build(&self) -> [u8; Self::SIZE] {
        let mut w = Writer::<[u8; Self::SIZE]>::fixed();
        w.u32(8, u32::from(self.read));
        w.u32(12, u32::from(self.write));
        w.0
    }

    /// Decodes and validates.
    pub fn parse(buf: &[u8]) -> Result<GatesMessage, AbiError> {
        let r = open_exact(buf, Self::SIZE)?;
        Ok(GatesMessage {
            read: gate(r.u32(8))?,
            write: gate(r.u32(12))?,
        })
    }
}

/// `IOCTL_ERASE_KEYS` output, 16 bytes: version u32, size u32, volumes u32 (how many volumes
/// had their keys erased), reserved u32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EraseReply {
    /// Volumes whose keys were erased.
    pub volumes: u32,
}

impl EraseReply {
    /// Exact byte size.
    pub const SIZE: usize = 16;

    /// Encodes.
    pub fn build(&self) -> [u8; Self::SIZE] {
        let mut w = Writer::<[u8; Self::SIZE]>::fixed();
        w.u32(8, self.volumes);
        w.0
    }

    /// Decodes.
    pub fn parse(buf: &[u8]) -> Result<EraseReply, AbiError> {
        let r = open_exact(buf, Self::SIZE)?;
        if r.u32(12) != 0 {
            return Err(AbiError::ReservedNotZero);
        }
        Ok(EraseReply { volumes: r.u32(8) })
    }
}

/// Bytes of the crypto backend name field (ASCII, NUL-padded).
pub const BACKEND_CHARS: usize = 16;

/// Named counters of [`CounterSnapshot`] carried by a status reply, in `fields()` order.
/// (Adding a counter to the volume breaks the build here until the ABI version is raised.)
pub const STATUS_COUNTERS: usize = 15;
/// Legacy routing reasons carried by a status reply, in `LegacyReason::ALL` order.
pub const STATUS_LEGACY_REASONS: usize = 4;
const OFF_COUNTERS: usize = 40;
const OFF_STATUS_DATA_SIZE: usize = OFF_COUNTERS + 8 * (STATUS_COUNTERS + STATUS_LEGACY_REASONS);
/// Purposes of [`VolumeMemory`] carried by a status reply, in `fields()` order.
/// (Adding a purpose breaks the build here until the reply grows by another block.)
pub const STATUS_MEMORY_PURPOSES: usize = 4;
const OFF_STATUS_MEMORY: usize = OFF_STATUS_DATA_SIZE + 8;
/// Counters added after the memory block, in `fields()` order after the first
/// [`STATUS_COUNTERS`].
pub const STATUS_LATER_COUNTERS: usize = 2;
const OFF_STATUS_LATER: usize = OFF_STATUS_MEMORY + 8 * STATUS_MEMORY_PURPOSES;

/// `IOCTL_STATUS` output, [`StatusReply::SIZE`] bytes:
///
/// | offset | field | type |
/// |---|---|---|
/// | 0 | version, size | u32, u32 |
/// | 8 | volume_id | u32 |
/// | 12 | mount flags | u32 (`MOUNT_*`) |
/// | 16 | effective gates | u32 (bit 0 read, bit 1 write: the snapshot taken at mount) |
/// | 20 | drive_letter | u16 |
/// | 22 | reserved | u16 |
/// | 24 | crypto backend | [u8; 16] ASCII, NUL-padded (`aes-ni`, `armv8-aes`, `soft`) |
/// | 40 | path counters | [u64; 15], `CounterSnapshot::fields()` order (direct_reads first) |
/// | 160 | legacy routings by reason | [u64; 4], `LegacyReason::ALL` order |
/// | 192 | data_size | u64 |
/// | 200 | nonpaged bytes held by the volume's buffers, by purpose (absent in a reply of [`StatusReply::SIZE_V1`] bytes) | [u64; 4], `VolumeMemory::fields()` order (direct_bounce first) |
/// | 232 | later counters: detached, dispatch_issued (absent in a reply of [`StatusReply::SIZE_V1`] or [`StatusReply::SIZE_V2`] bytes) | [u64; 2] |
///
/// The reply grows at its end only, and its `size` field says which layout it is: a driver
/// writes each later block only when the caller's output buffer has room for it (an older
/// vcctl asks for [`StatusReply::SIZE_V1`] or [`StatusReply::SIZE_V2`] bytes and gets exactly
/// those), and vcctl accepts the shorter replies of an older driver (`memory` is then `None`,
/// or `later_counters` false and the later counters read 0).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusReply {
    /// The volume's id.
    pub volume_id: u32,
    /// Its mount flags.
    pub flags: u32,
    /// Gates snapshot taken at mount.
    pub gates: GatesMessage,
    /// Its drive letter.
    pub drive_letter: Option<char>,
    /// Crypto backend name (ASCII, at most 15 bytes).
    pub backend: Vec<u8>,
    /// The volume's path counters.
    pub counters: CounterSnapshot,
    /// Data area size in bytes.
    pub data_size: u64,
    /// Nonpaged bytes the volume's buffers hold, by purpose (`None`: a reply without the
    /// memory block).
    pub memory: Option<VolumeMemory>,
    /// The reply carries the counters added after the memory block (needs `memory`).
    pub later_counters: bool,
}

impl StatusReply {
    /// Byte size of the first layout, without the memory block.
    pub const SIZE_V1: usize = OFF_STATUS_DATA_SIZE + 8;
    /// Byte size with the memory block.
    pub const SIZE_V2: usize = OFF_STATUS_LATER;
    /// Byte size with the memory block and the later counters (what vcctl asks for).
    pub const SIZE: usize = OFF_STATUS_LATER + 8 * STATUS_LATER_COUNTERS;

    /// Encodes (driver side).
    pub fn build(&self) -> Result<Vec<u8>, AbiError> {
        if self.backend.len() >= BACKEND_CHARS || self.backend.contains(&0) {
            return Err(AbiError::TooLong);
        }
        let mut w = Writer::new(match (&self.memory, self.later_counters) {
            (None, false) => Self::SIZE_V1,
            (Some(_), false) => Self::SIZE_V2,
            (Some(_), true) => Self::SIZE,
            (None, true) => return Err(AbiError::TooLong),
        })?;
        w.u32(8, self.volume_id);
        w.u32(12, self.flags);
        w.u32(
            16,
            u32::from(self.gates.read) | (u32::from(self.gates.write) << 1),
        );
        w.u16(20, letter_field(self.drive_letter));
        w.bytes(24, &self.backend);
        let named: [(&str, u64); STATUS_COUNTERS + STATUS_LATER_COUNTERS] = self.counters.fields();
        let values = named[..STATUS_COUNTERS]
            .iter()
            .map(|(_, v)| *v)
            .chain(self.counters.legacy_by_reason);
        for (i, v) in values.enumerate() {
            w.u64(OFF_COUNTERS + 8 * i, v);
        }
        w.u64(OFF_STATUS_DATA_SIZE, self.data_size);
        if let Some(memory) = &self.memory {
            let named: [(&str, u64); STATUS_MEMORY_PURPOSES] = memory.fields();
            for (i, (_, v)) in named.iter().enumerate() {
                w.u64(OFF_STATUS_MEMORY + 8 * i, *v);
            }
        }
        if self.later_counters {
            for (i, (_, v)) in named[STATUS_COUNTERS..].iter().enumerate() {
                w.u64(OFF_STATUS_LATER + 8 * i, *v);
            }
        }
        Ok(w.0)
    }

    /// Decodes (vcctl side).
    pub fn parse(buf: &[u8]) -> Result<StatusReply, AbiError> {
        let expected = match buf.len() {
            Self::SIZE_V1 => Self::SIZE_V1,
            Self::SIZE_V2 => Self::SIZE_V2,
            _ => Self::SIZE,
        };
        let later_counters = expected == Self::SIZE;
        let r = open_exact(buf, expected)?;
        let gates = r.u32(16);
        if gates & !3 != 0 {
            return Err(AbiError::BadGateValue(gates));
        }
        if r.u16(22) != 0 {
            return Err(AbiError::ReservedNotZero);
        }
        let field = buf.get(24..24 + BACKEND_CHARS).ok_or(AbiError::WrongSize {
            expected,
            got: buf.len(),
        })?;
        let end = field
            .iter()
            .position(|b| *b == 0)
            .ok_or(AbiError::Unterminated)?;
        if field[end..].iter().any(|b| *b != 0) {
            return Err(AbiError::PaddingNotZero);
        }
        let mut backend = crate::io::try_vec(end).map_err(|_| AbiError::NoMemory)?;
        backend.extend_from_slice(&field[..end]);
        let c = |i: usize| r.u64(OFF_COUNTERS + 8 * i);
        let counters = CounterSnapshot {
            direct_reads: c(0),
            direct_writes: c(1),
            direct_bytes: c(2),
            direct_segments: c(3),
            direct_flushes: c(4),
            legacy_reads: c(5),
            legacy_writes: c(6),
            legacy_bytes: c(7),
            legacy_fragments: c(8),
            immediate_flushes: c(9),
            slot_waits: c(10),
            direct_in_flight_max: c(11),
            range_waits: c(12),
            rejected: c(13),
            failed: c(14),
            detached: if later_counters {
                r.u64(OFF_STATUS_LATER)
            } else {
                0
            },
            dispatch_issued: if later_counters {
                r.u64(OFF_STATUS_LATER + 8)
            } else {
                0
            },
            legacy_by_reason: [c(15), c(16), c(17), c(18)],
        };
        Ok(StatusReply {
            volume_id: r.u32(8),
            flags: r.u32(12),
            gates: GatesMessage {
                read: gates & 1 != 0,
                write: gates & 2 != 0,
            },
            drive_letter: parse_letter(r.u16(20))?,
            backend,
            counters,
            data_size: r.u64(OFF_STATUS_DATA_SIZE),
            later_counters,
            memory: (expected != Self::SIZE_V1).then(|| {
                let m = |i: usize| r.u64(OFF_STATUS_MEMORY + 8 * i);
                VolumeMemory {
                    direct_bounce: m(0),
                    legacy_fragments: m(1),
                    legacy_read_ahead: m(2),
                    legacy_unaligned: m(3),
                }
            }),
        })
    }
}

/// One entry of a list reply, 16 bytes: volume_id u32, flags u32, drive_letter u16,
/// letter_kind u16 (how the letter was made: 0 none, 1 mount manager, 2 global link; was
/// reserved, so a driver without it sends 0), reserved [u8; 4].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListEntry {
    /// Volume id.
    pub volume_id: u32,
    /// Mount flags.
    pub flags: u32,
    /// Drive letter.
    pub drive_letter: Option<char>,
    /// How the drive letter was made (W2).
    pub letter_kind: LinkKind,
}

/// `IOCTL_LIST` output: version u32, size u32 (= 16 + 16 x count), count u32, driver flags
/// u32 (bit 0 [`LIST_UNLOAD_DISABLED`]; was reserved, so a driver without it sends 0),
/// then `count` [`ListEntry`] records. The caller passes a buffer of
/// [`ListReply::MAX_SIZE`] bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListReply {
    /// Mounted volumes.
    pub entries: Vec<ListEntry>,
    /// W3: a dismount latched "unload disabled" for this boot (the driver stays loaded).
    pub unload_disabled: bool,
}

/// List reply driver flag: unload disabled until reboot (W3).
pub const LIST_UNLOAD_DISABLED: u32 = 1;

/// What vcctl prints when the list reply carries [`LIST_UNLOAD_DISABLED`].
pub const UNLOAD_DISABLED_NOTE: &str = "note: vcdirect stays loaded until reboot: a dismount left \
    its file system or open files holding a deleted volume device, so `sc stop` would lock \
    vcctl out";

impl ListReply {
    /// Largest reply.
    pub const MAX_SIZE: usize = 16 + 16 * MAX_LIST_ENTRIES;

    /// Encodes (driver side); `out_capacity` is the caller's output buffer length.
    pub fn build(&self, out_capacity: usize) -> Result<Vec<u8>, AbiError> {
        if self.entries.len() > MAX_LIST_ENTRIES {
            return Err(AbiError::BadCount(self.entries.len() as u32));
        }
        let size = 16 + 16 * self.entries.len();
        if out_capacity < size {
            return Err(AbiError::OutputTooSmall { needed: size });
        }
        let mut w = Writer::new(size)?;
        w.u32(8, self.entries.len() as u32);
        w.u32(12, u32::from(self.unload_disabled) * LIST_UNLOAD_DISABLED);
        for (i, e) in self.entries.iter().enumerate() {
            let at = 16 + 16 * i;
            w.u32(at, e.volume_id);
            w.u32(at + 4, e.flags);
            w.u16(at + 8, letter_field(e.drive_letter));
            w.u16(at + 10, e.letter_kind.to_raw());
        }
        Ok(w.0)
    }

    /// Decodes (vcctl side): `buf` is exactly the bytes the driver returned.
    pub fn parse(buf: &[u8]) -> Result<ListReply, AbiError> {
        if buf.len() < 16 {
            return Err(AbiError::WrongSize {
                expected: 16,
                got: buf.len(),
            });
        }
        let r = Reader(buf);
        super::check_prefix(&r)?;
        let count = r.u32(8);
        if count as usize > MAX_LIST_ENTRIES || buf.len() != 16 + 16 * count as usize {
            return Err(AbiError::BadCount(count));
        }
        let flags = r.u32(12);
        if flags & !LIST_UNLOAD_DISABLED != 0 {
            return Err(AbiError::ReservedNotZero);
        }
        let mut entries = crate::io::try_vec(count as usize).map_err(|_| AbiError::NoMemory)?;
        for i in 0..count as usize {
            let at = 16 + 16 * i;
            if r.u32(at + 12) != 0 {
                return Err(AbiError::ReservedNotZero);
            }
            let kind = r.u16(at + 10);
            entries.push(ListEntry {
                volume_id: r.u32(at),
                flags: r.u32(at + 4),
                drive_letter: parse_letter(r.u16(at + 8))?,
                letter_kind: LinkKind::from_raw(kind).ok_or(AbiError::BadLinkKind(kind))?,
            });
        }
        Ok(ListReply {
            entries,
            unload_disabled: flags & LIST_UNLOAD_DISABLED != 0,
        })
    }
}
