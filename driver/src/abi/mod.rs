//! The IOCTL ABI shared by vcctl (builds requests, parses replies) and the driver (parses
//! requests, builds replies), and the fuzz targets.
//!
//! Owns: IOCTL codes, the versioned little-endian layouts below, and their strict validation,
//! whose errors map to a [`Status`]. Never: acts on a request (the `wdm` glue does).
//!
//! Every buffer starts with `version: u32` ([`ABI_VERSION`]) and `size: u32` (the buffer's
//! exact length). Layouts are fixed; offsets are listed on each type as a `#[repr(C)]` struct
//! with the same fields would place them. Integers are little-endian; strings are UTF-16LE,
//! NUL-terminated inside a fixed field, padded with zeros.

use alloc::vec::Vec;
use zeroize::Zeroize;

use crate::crypto::MAX_KEY_AREA;
use crate::Status;

pub mod buffer;
mod layout;
#[cfg(test)]
mod tests;

pub use layout::*;

/// The version every buffer carries.
pub const ABI_VERSION: u32 = 1;

/// `FILE_DEVICE_UNKNOWN`: the device type of the vcdirect control device.
pub const FILE_DEVICE_VCDIRECT: u32 = 0x0000_0022;
/// `METHOD_BUFFERED`.
pub const METHOD_BUFFERED: u32 = 0;
/// `FILE_ANY_ACCESS`.
pub const FILE_ANY_ACCESS: u32 = 0;
/// `FILE_READ_DATA | FILE_WRITE_DATA`: required for requests that change state.
pub const FILE_READ_WRITE_ACCESS: u32 = 0x0001 | 0x0002;

/// Windows' CTL_CODE macro.
pub const fn ctl_code(device: u32, function: u32, method: u32, access: u32) -> u32 {
    (device << 16) | (access << 14) | (function << 2) | method
}

/// Mount a volume: in [`MountRequest`], out [`MountReply`].
pub const IOCTL_MOUNT: u32 = ctl_code(
    FILE_DEVICE_VCDIRECT,
    0x800,
    METHOD_BUFFERED,
    FILE_READ_WRITE_ACCESS,
);
/// Dismount: in [`VolumeRequest`] (with [`DISMOUNT_FORCE`]), out nothing.
pub const IOCTL_DISMOUNT: u32 = ctl_code(
    FILE_DEVICE_VCDIRECT,
    0x801,
    METHOD_BUFFERED,
    FILE_READ_WRITE_ACCESS,
);
/// List mounted volumes: in [`EmptyRequest`], out [`ListReply`].
pub const IOCTL_LIST: u32 = ctl_code(
    FILE_DEVICE_VCDIRECT,
    0x802,
    METHOD_BUFFERED,
    FILE_ANY_ACCESS,
);
/// Status of one volume: in [`VolumeRequest`], out [`StatusReply`].
pub const IOCTL_STATUS: u32 = ctl_code(
    FILE_DEVICE_VCDIRECT,
    0x803,
    METHOD_BUFFERED,
    FILE_ANY_ACCESS,
);
/// Gates the driver holds for future mounts: in [`EmptyRequest`], out [`GatesMessage`].
pub const IOCTL_GATES_GET: u32 = ctl_code(
    FILE_DEVICE_VCDIRECT,
    0x804,
    METHOD_BUFFERED,
    FILE_ANY_ACCESS,
);
/// Set the gates for future mounts: in [`GatesMessage`], out [`GatesMessage`].
pub const IOCTL_GATES_SET: u32 = ctl_code(
    FILE_DEVICE_VCDIRECT,
    0x805,
    METHOD_BUFFERED,
    FILE_READ_WRITE_ACCESS,
);
/// Re-read the gates from the registry: in [`EmptyRequest`], out [`GatesMessage`].
pub const IOCTL_GATES_RELOAD: u32 = ctl_code(
    FILE_DEVICE_VCDIRECT,
    0x806,
    METHOD_BUFFERED,
    FILE_READ_WRITE_ACCESS,
);
/// Erase the keys of every mounted volume: in [`EmptyRequest`], out [`EraseReply`].
pub const IOCTL_ERASE_KEYS: u32 = ctl_code(
    FILE_DEVICE_VCDIRECT,
    0x807,
    METHOD_BUFFERED,
    FILE_READ_WRITE_ACCESS,
);

/// The device path vcctl opens.
pub const DEVICE_PATH: &str = r"\\.\vcdirect";

/// Why a buffer was refused. Every variant maps to a [`Status`] with [`AbiError::status`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AbiError {
    /// The buffer is not the exact size of the layout.
    WrongSize {
        /// Bytes the layout needs.
        expected: usize,
        /// Bytes given.
        got: usize,
    },
    /// An output buffer is too small for the reply.
    OutputTooSmall {
        /// Bytes the reply needs.
        needed: usize,
    },
    /// The `version` field is not [`ABI_VERSION`].
    WrongVersion(u32),
    /// The `size` field differs from the buffer length.
    SizeFieldMismatch(u32),
    /// Flag bits this version does not define.
    UnknownFlags(u32),
    /// Flags that cannot go together (hidden + protect-hidden).
    ConflictingFlags,
    /// Sector size not 512, 1024, 2048 or 4096.
    BadSectorSize(u32),
    /// Key length other than the algorithm's (64 for AES, 64 per cipher of a cascade).
    BadKeyLength(u16),
    /// An algorithm number other than 1..=15 (`crate::crypto::Algorithm::id`).
    UnknownAlgorithm(u32),
    /// Bytes of the key area past the algorithm's key length are not zero.
    KeyPaddingNotZero,
    /// An extended-layout request names AES, whose mounts use the first layout.
    AesInExtendedLayout,
    /// An offset or size not aligned to the sector size.
    Misaligned,
    /// An empty, overflowing or out-of-volume range.
    BadRange,
    /// A drive letter other than 0 or 'A'..='Z'.
    BadDriveLetter(u16),
    /// A reserved field is not zero.
    ReservedNotZero,
    /// A string field has no NUL terminator inside its bound.
    Unterminated,
    /// The host path is empty.
    EmptyPath,
    /// Bytes after a string's NUL terminator are not zero.
    PaddingNotZero,
    /// `wine_host_driver_name` is set, but this build is not the Wine test build.
    WineHostNotAllowed,
    /// A gate value other than 0 or 1.
    BadGateValue(u32),
    /// A list with more entries than [`MAX_LIST_ENTRIES`] or a count that disagrees with size.
    BadCount(u32),
    /// Neither a drive letter nor a volume id names the volume, or both do.
    BadTarget,
    /// A string too long for its field (build side).
    TooLong,
    /// A list entry's letter kind other than 0, 1 or 2.
    BadLinkKind(u16),
    /// The memory for a parsed string or a built buffer could not be allocated (W6: every
    /// allocation of the ABI is fallible; the driver fails the IOCTL with
    /// STATUS_INSUFFICIENT_RESOURCES).
    NoMemory,
}

impl AbiError {
    /// The NTSTATUS the driver completes the IOCTL with.
    pub const fn status(self) -> Status {
        match self {
            // STATUS_BUFFER_TOO_SMALL: the caller may retry with a larger buffer.
            AbiError::OutputTooSmall { .. } => Status::Host(0xC000_0023),
            // STATUS_INFO_LENGTH_MISMATCH for inputs of the wrong length.
            AbiError::WrongSize { .. } => Status::Host(0xC000_0004),
            // STATUS_REVISION_MISMATCH for another ABI version.
            AbiError::WrongVersion(_) => Status::Host(0xC000_0059),
            AbiError::NoMemory => Status::InsufficientResources,
            _ => Status::InvalidParameter,
        }
    }
}

impl core::fmt::Display for AbiError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            AbiError::WrongSize { expected, got } => {
                write!(f, "buffer is {got} bytes, layout needs {expected}")
            }
            AbiError::OutputTooSmall { needed } => write!(f, "output buffer needs {needed} bytes"),
            AbiError::WrongVersion(v) => write!(f, "ABI version {v}, expected {ABI_VERSION}"),
            AbiError::SizeFieldMismatch(s) => write!(f, "size field {s} differs from buffer"),
            AbiError::UnknownFlags(x) => write!(f, "unknown flags {x:#x}"),
            AbiError::ConflictingFlags => write!(f, "conflicting flags"),
            AbiError::BadSectorSize(s) => write!(f, "bad sector size {s}"),
            AbiError::BadKeyLength(k) => {
                write!(f, "key length {k} is not the algorithm's (64 per cipher)")
            }
            AbiError::UnknownAlgorithm(a) => write!(f, "unknown encryption algorithm {a}"),
            AbiError::AesInExtendedLayout => {
                write!(f, "an AES mount request uses the first layout")
            }
            AbiError::KeyPaddingNotZero => {
                write!(f, "key area bytes past the key length are not zero")
            }
            AbiError::Misaligned => write!(f, "offset or size not sector aligned"),
            AbiError::BadRange => write!(f, "empty, overflowing or out-of-range byte range"),
            AbiError::BadDriveLetter(c) => write!(f, "bad drive letter {c:#x}"),
            AbiError::ReservedNotZero => write!(f, "reserved field not zero"),
            AbiError::Unterminated => write!(f, "string not NUL-terminated within its field"),
            AbiError::EmptyPath => write!(f, "empty host path"),
            AbiError::PaddingNotZero => write!(f, "bytes after a string's NUL are not zero"),
            AbiError::WineHostNotAllowed => {
                write!(
                    f,
                    "wine_host_driver_name is only accepted by the Wine test build"
                )
            }
            AbiError::BadGateValue(v) => write!(f, "gate value {v}, expected 0 or 1"),
            AbiError::BadCount(c) => write!(f, "bad entry count {c}"),
            AbiError::BadTarget => write!(f, "name the volume by drive letter or by id"),
            AbiError::TooLong => write!(f, "string too long for its field"),
            AbiError::BadLinkKind(k) => write!(f, "bad letter kind {k}"),
            AbiError::NoMemory => write!(f, "out of memory"),
        }
    }
}

/// Little-endian reader over a buffer of checked length: every offset a parser reads is a
/// constant of its layout (or, for a list, bounded by a count checked against the length)
/// inside a buffer whose length `open_exact` (or the list parser) checked first; an offset
/// outside the buffer all the same reads as zeros, never a panic (W6).
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn array<const N: usize>(&self, at: usize) -> [u8; N] {
        at.checked_add(N)
            .and_then(|end| self.0.get(at..end))
            .and_then(|b| <[u8; N]>::try_from(b).ok())
            .unwrap_or([0; N])
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_le_bytes(self.array(at))
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes(self.array(at))
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.array(at))
    }
    /// A NUL-terminated UTF-16 string in `chars` code units at `at`; zero padding required.
    /// The string is copied into fallibly allocated storage (W6: [`AbiError::NoMemory`]).
    fn utf16(&self, at: usize, chars: usize) -> Result<Vec<u16>, AbiError> {
        let unit = |i: usize| self.u16(at + 2 * i);
        let end = (0..chars)
            .position(|i| unit(i) == 0)
            .ok_or(AbiError::Unterminated)?;
        if (end..chars).any(|i| unit(i) != 0) {
            return Err(AbiError::PaddingNotZero);
        }
        let mut s = crate::io::try_vec(end).map_err(|_| AbiError::NoMemory)?;
        s.extend((0..end).map(unit));
        Ok(s)
    }
}

/// Little-endian writer into a zeroed buffer: a fixed array for the small fixed-size
/// messages (no allocation: the driver's mount, gates and erase replies), a fallibly
/// allocated vector for the others ([`Writer::new`]). Offsets are the layouts' constants.
struct Writer<B>(B);

impl<const N: usize> Writer<[u8; N]> {
    /// A zeroed `N`-byte message with its version and size.
    fn fixed() -> Self {
        let mut w = Writer([0u8; N]);
        w.u32(0, ABI_VERSION);
        w.u32(4, N as u32);
        w
    }
}

impl Writer<Vec<u8>> {
    /// A zeroed `size`-byte message with its version and size, allocated fallibly (W6).
    fn new(size: usize) -> Result<Self, AbiError> {
        let mut v = crate::io::try_vec(size).map_err(|_| AbiError::NoMemory)?;
        v.resize(size, 0);
        let mut w = Writer(v);
        w.u32(0, ABI_VERSION);
        w.u32(4, size as u32);
        Ok(w)
    }
}

impl<B: AsMut<[u8]>> Writer<B> {
    fn bytes(&mut self, at: usize, v: &[u8]) {
        if let Some(field) = self.0.as_mut().get_mut(at..at + v.len()) {
            field.copy_from_slice(v);
        }
    }
    fn u16(&mut self, at: usize, v: u16) {
        self.bytes(at, &v.to_le_bytes());
    }
    fn u32(&mut self, at: usize, v: u32) {
        self.bytes(at, &v.to_le_bytes());
    }
    fn u64(&mut self, at: usize, v: u64) {
        self.bytes(at, &v.to_le_bytes());
    }
    fn utf16(&mut self, at: usize, chars: usize, s: &[u16]) -> Result<(), AbiError> {
        // One unit is kept for the terminator; an embedded NUL would truncate silently.
        if s.len() >= chars || s.contains(&0) {
            return Err(AbiError::TooLong);
        }
        for (i, c) in s.iter().enumerate() {
            self.u16(at + 2 * i, *c);
        }
        Ok(())
    }
}

/// Checks length, version and size field; returns a reader.
fn open_exact(buf: &[u8], expected: usize) -> Result<Reader<'_>, AbiError> {
    if buf.len() != expected {
        return Err(AbiError::WrongSize {
            expected,
            got: buf.len(),
        });
    }
    let r = Reader(buf);
    check_prefix(&r)?;
    Ok(r)
}

fn check_prefix(r: &Reader<'_>) -> Result<(), AbiError> {
    let version = r.u32(0);
    if version != ABI_VERSION {
        return Err(AbiError::WrongVersion(version));
    }
    let size = r.u32(4);
    if size as usize != r.0.len() {
        return Err(AbiError::SizeFieldMismatch(size));
    }
    Ok(())
}

/// A master key area (64 bytes for AES, up to [`MAX_KEY_AREA`] for a cascade) in a block of
/// its own, zeroized on drop. Deliberately neither `Debug` nor `Display` nor `Clone`
/// (docs/review.md W5; the first two checked at compile time in `crate::secret`).
///
/// The bytes never live on a stack: the block is allocated (fallibly, W6) before they are
/// written into it, and moving a `MasterKey` or the request that holds it moves a pointer.
pub struct MasterKey {
    block: Vec<[u8; MAX_KEY_AREA]>,
    len: usize,
}

impl MasterKey {
    /// A key holding a copy of `bytes` (the caller's copy is theirs to wipe);
    /// [`AbiError::BadKeyLength`] when longer than [`MAX_KEY_AREA`].
    pub fn try_new(bytes: &[u8]) -> Result<MasterKey, AbiError> {
        let mut key = MasterKey::try_zeroed(bytes.len())?;
        key.copy_from_slice(bytes);
        Ok(key)
    }

    /// An all-zero key of `len` bytes in its own block (a vector of one key area, allocated
    /// fallibly), to be filled in place; [`AbiError::NoMemory`] when the block cannot be
    /// allocated, [`AbiError::BadKeyLength`] when `len` is over [`MAX_KEY_AREA`].
    pub fn try_zeroed(len: usize) -> Result<MasterKey, AbiError> {
        if len > MAX_KEY_AREA {
            return Err(AbiError::BadKeyLength(len.min(usize::from(u16::MAX)) as u16));
        }
        let mut block = crate::io::try_vec(1).map_err(|_| AbiError::NoMemory)?;
        block.push([0; MAX_KEY_AREA]);
        Ok(MasterKey { block, len })
    }
}

/// Compares in constant time (no early exit on the first differing byte).
impl PartialEq for MasterKey {
    fn eq(&self, other: &Self) -> bool {
        let diff = self
            .iter()
            .zip(other.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        diff == 0 && self.len == other.len
    }
}

impl Eq for MasterKey {}

impl Drop for MasterKey {
    fn drop(&mut self) {
        for key in self.block.iter_mut() {
            key.zeroize();
        }
    }
}

impl core::ops::Deref for MasterKey {
    type Target = [u8];
    fn deref(&self) -> &Self::Target {
        // The one key area every constructor pushes, `len` at most its size.
        self.block
            .first()
            .and_then(|k| k.get(..self.len))
            .unwrap_or_default()
    }
}

impl core::ops::DerefMut for MasterKey {
    fn deref_mut(&mut self) -> &mut Self::Target {
        let len = self.len;
        self.block
            .first_mut()
            .and_then(|k| k.get_mut(..len))
            .unwrap_or_default()
    }
}
