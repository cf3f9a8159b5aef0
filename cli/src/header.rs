//! The VeraCrypt volume header (docs/design.md §4): layout, checks, and encoding.
//!
//! Owns: the byte layout of a decrypted 512-byte header (big-endian integers), its two CRC-32
//! checks, and the geometry rules. [`parse_decrypted_header`] needs no key derivation, so the
//! fuzz targets call it directly.
//! Never: derives keys or decrypts (see `volume`), touches files.

use std::fmt;

use zeroize::Zeroizing;

/// Bytes in a volume header.
pub const HEADER_SIZE: usize = 512;
/// Bytes of salt at the start of the header (stored in clear).
pub const SALT_SIZE: usize = 64;
/// Bytes of master key area.
pub const KEY_AREA_SIZE: usize = 256;
/// Header version VeraCrypt 1.x writes.
pub const VERSION: u16 = 5;
/// "Minimum program version to extract" that VeraCrypt writes.
pub const REQUIRED_PROGRAM_VERSION: u16 = 0x010b;
/// The VeraCrypt version whose volumes vcctl reads (1.26): a header asking for a later
/// program is refused, as VeraCrypt 1.26 refuses it.
pub const PROGRAM_VERSION: u16 = 0x0126;
/// Header flag: the header belongs to system encryption (boot drive; not served here).
pub const FLAG_SYSTEM_ENCRYPTION: u32 = 0x1;
/// Header flag: the volume was made by non-system in-place encryption.
pub const FLAG_INPLACE_ENCRYPTION: u32 = 0x2;

const MAGIC: &[u8; 4] = b"VERA";
const OFF_MAGIC: usize = 64;
const OFF_VERSION: usize = 68;
const OFF_REQUIRED: usize = 70;
const OFF_KEY_CRC: usize = 72;
const OFF_HIDDEN_SIZE: usize = 92;
const OFF_VOLUME_SIZE: usize = 100;
const OFF_AREA_START: usize = 108;
const OFF_AREA_LENGTH: usize = 116;
const OFF_FLAGS: usize = 124;
const OFF_SECTOR_SIZE: usize = 128;
const OFF_HEADER_CRC: usize = 252;
const OFF_KEYS: usize = 256;

/// A decrypted, checked volume header.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    /// Header format version (4 or 5).
    pub version: u16,
    /// Minimum program version the header asks for.
    pub required_program_version: u16,
    /// Size of the hidden volume (non-zero only in a hidden volume's header).
    pub hidden_volume_size: u64,
    /// Size of the volume in bytes.
    pub volume_size: u64,
    /// Byte offset of the encrypted data area from the start of the container.
    pub data_offset: u64,
    /// Length of the encrypted data area in bytes.
    pub data_size: u64,
    /// Header flags (bit 0: system encryption, bit 1: in-place encryption).
    pub flags: u32,
    /// Sector size in bytes.
    pub sector_size: u32,
    /// The 256-byte master key area (zeroized on drop).
    pub master_key: Zeroizing<[u8; KEY_AREA_SIZE]>,
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print key material.
        f.debug_struct("Header")
            .field("version", &self.version)
            .field("volume_size", &self.volume_size)
            .field("hidden_volume_size", &self.hidden_volume_size)
            .field("data_offset", &self.data_offset)
            .field("data_size", &self.data_size)
            .field("flags", &self.flags)
            .field("sector_size", &self.sector_size)
            .finish_non_exhaustive()
    }
}

/// Why a decrypted header was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderError {
    /// Bytes 64..68 are not "VERA": wrong key (or not a VeraCrypt header).
    BadMagic,
    /// The CRC-32 of bytes 64..252 does not match the value at 252.
    HeaderCrc,
    /// The CRC-32 of the master key area does not match the value at 72.
    KeyAreaCrc,
    /// A header version this tool does not read.
    UnsupportedVersion(u16),
    /// Sector size not a multiple of 512 between 512 and 4096.
    BadSectorSize(u32),
    /// Data area empty, misaligned or overflowing.
    BadGeometry,
    /// The header asks for a later program version than VeraCrypt 1.26.
    NewerProgramRequired(u16),
    /// A system-encryption header (flag 0x1): vcctl serves only non-system volumes.
    SystemEncryption,
    /// In-place encryption (flag 0x2) not finished: encrypted area shorter than the volume.
    InPlaceEncryptionIncomplete {
        /// Bytes encrypted so far.
        encrypted: u64,
        /// Size of the volume.
        volume: u64,
    },
}

impl HeaderError {
    /// True when the header decrypted and is intact but names something this tool (like
    /// VeraCrypt 1.26) does not mount; false when it is damaged.
    pub fn is_unsupported(self) -> bool {
        matches!(
            self,
            HeaderError::UnsupportedVersion(_)
                | HeaderError::NewerProgramRequired(_)
                | HeaderError::SystemEncryption
                | HeaderError::InPlaceEncryptionIncomplete { .. }
        )
    }
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::BadMagic => write!(f, "header magic is not VERA"),
            HeaderError::HeaderCrc => write!(f, "header CRC-32 (bytes 64..252) does not match"),
            HeaderError::KeyAreaCrc => write!(f, "master key area CRC-32 does not match"),
            HeaderError::UnsupportedVersion(v) => write!(f, "unsupported header version {v}"),
            HeaderError::BadSectorSize(s) => write!(f, "unsupported sector size {s}"),
            HeaderError::BadGeometry => write!(f, "data area offset/size are invalid"),
            HeaderError::NewerProgramRequired(v) => write!(
                f,
                "the header requires program version {}.{:02x} or later; vcctl reads VeraCrypt 1.26 volumes",
                v >> 8,
                v & 0xff
            ),
            HeaderError::SystemEncryption => write!(
                f,
                "system-encryption header (flag 0x1): only non-system volumes are supported"
            ),
            HeaderError::InPlaceEncryptionIncomplete { encrypted, volume } => write!(
                f,
                "in-place encryption not finished (flag 0x2): {encrypted} of {volume} bytes encrypted; finish it in VeraCrypt first"
            ),
        }
    }
}

impl std::error::Error for HeaderError {}

fn be16(b: &[u8; HEADER_SIZE], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}
fn be32(b: &[u8; HEADER_SIZE], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn be64(b: &[u8; HEADER_SIZE], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

/// Parses a header whose bytes 64..512 are already decrypted (bytes 0..64 are the salt and
/// are ignored). Checks magic, both CRC-32 values, version, sector size and geometry, then
/// what VeraCrypt 1.26 checks before it mounts: the required program version (at most 1.26)
/// and the flags (no system encryption; in-place encryption finished). Other flag bits are
/// ignored, as VeraCrypt ignores them.
pub fn parse_decrypted_header(bytes: &[u8; HEADER_SIZE]) -> Result<Header, HeaderError> {
    if &bytes[OFF_MAGIC..OFF_MAGIC + 4] != MAGIC {
        return Err(HeaderError::BadMagic);
    }
    let version = be16(bytes, OFF_VERSION);
    if !(4..=VERSION).contains(&version) {
        return Err(HeaderError::UnsupportedVersion(version));
    }
    if crc32fast::hash(&bytes[OFF_MAGIC..OFF_HEADER_CRC]) != be32(bytes, OFF_HEADER_CRC) {
        return Err(HeaderError::HeaderCrc);
    }
    if crc32fast::hash(&bytes[OFF_KEYS..]) != be32(bytes, OFF_KEY_CRC) {
        return Err(HeaderError::KeyAreaCrc);
    }
    let sector_size = if version >= 5 {
        be32(bytes, OFF_SECTOR_SIZE)
    } else {
        512
    };
    if !(512..=4096).contains(&sector_size) || !sector_size.is_multiple_of(512) {
        return Err(HeaderError::BadSectorSize(sector_size));
    }
    let data_offset = be64(bytes, OFF_AREA_START);
    let data_size = be64(bytes, OFF_AREA_LENGTH);
    let aligned = |x: u64| x.is_multiple_of(u64::from(sector_size));
    if data_size == 0
        || !aligned(data_offset)
        || !aligned(data_size)
        || data_offset.checked_add(data_size).is_none()
    {
        return Err(HeaderError::BadGeometry);
    }
    let required_program_version = be16(bytes, OFF_REQUIRED);
    if required_program_version > PROGRAM_VERSION {
        return Err(HeaderError::NewerProgramRequired(required_program_version));
    }
    let flags = be32(bytes, OFF_FLAGS);
    let volume_size = be64(bytes, OFF_VOLUME_SIZE);
    if flags & FLAG_SYSTEM_ENCRYPTION != 0 {
        return Err(HeaderError::SystemEncryption);
    }
    if flags & FLAG_INPLACE_ENCRYPTION != 0 && data_size != volume_size {
        return Err(HeaderError::InPlaceEncryptionIncomplete {
            encrypted: data_size,
            volume: volume_size,
        });
    }
    let mut master_key = Zeroizing::new([0u8; KEY_AREA_SIZE]);
    master_key.copy_from_slice(&bytes[OFF_KEYS..]);
    Ok(Header {
        version,
        required_program_version,
        hidden_volume_size: be64(bytes, OFF_HIDDEN_SIZE),
        volume_size,
        data_offset,
        data_size,
        flags,
        sector_size,
        master_key,
    })
}

/// Encodes `header` with `salt` into a 512-byte header whose bytes 64..512 are still plain
/// (the caller encrypts them as data unit 0). Both CRC-32 values are computed here.
pub fn encode_header(header: &Header, salt: &[u8; SALT_SIZE]) -> Zeroizing<[u8; HEADER_SIZE]> {
    let mut b = Zeroizing::new([0u8; HEADER_SIZE]);
    b[..SALT_SIZE].copy_from_slice(salt);
    b[OFF_MAGIC..OFF_MAGIC + 4].copy_from_slice(MAGIC);
    b[OFF_VERSION..OFF_VERSION + 2].copy_from_slice(&header.version.to_be_bytes());
    b[OFF_REQUIRED..OFF_REQUIRED + 2]
        .copy_from_slice(&header.required_program_version.to_be_bytes());
    b[OFF_HIDDEN_SIZE..OFF_HIDDEN_SIZE + 8]
        .copy_from_slice(&header.hidden_volume_size.to_be_bytes());
    b[OFF_VOLUME_SIZE..OFF_VOLUME_SIZE + 8].copy_from_slice(&header.volume_size.to_be_bytes());
    b[OFF_AREA_START..OFF_AREA_START + 8].copy_from_slice(&header.data_offset.to_be_bytes());
    b[OFF_AREA_LENGTH..OFF_AREA_LENGTH + 8].copy_from_slice(&header.data_size.to_be_bytes());
    b[OFF_FLAGS..OFF_FLAGS + 4].copy_from_slice(&header.flags.to_be_bytes());
    b[OFF_SECTOR_SIZE..OFF_SECTOR_SIZE + 4].copy_from_slice(&header.sector_size.to_be_bytes());
    b[OFF_KEYS..].copy_from_slice(&header.master_key[..]);
    let key_crc = crc32fast::hash(&b[OFF_KEYS..]);
    b[OFF_KEY_CRC..OFF_KEY_CRC + 4].copy_from_slice(&key_crc.to_be_bytes());
    let header_crc = crc32fast::hash(&b[OFF_MAGIC..OFF_HEADER_CRC]);
    b[OFF_HEADER_CRC..OFF_HEADER_CRC + 4].copy_from_slice(&header_crc.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        let mut master_key = Zeroizing::new([0u8; KEY_AREA_SIZE]);
        master_key
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = i as u8);
        Header {
            version: VERSION,
            required_program_version: REQUIRED_PROGRAM_VERSION,
            hidden_volume_size: 0,
            volume_size: 1 << 20,
            data_offset: 131_072,
            data_size: 1 << 20,
            flags: 0,
            sector_size: 512,
            master_key,
        }
    }

    #[test]
    fn finished_in_place_encryption_unknown_flags_and_version_1_26_are_accepted() {
        for (flags, required) in [(2, 0x0126), (0x8000_0000, 0x0100), (6, 0)] {
            let h = Header {
                flags,
                required_program_version: required,
                ..sample()
            };
            let b = encode_header(&h, &[0; SALT_SIZE]);
            assert_eq!(parse_decrypted_header(&b), Ok(h));
        }
    }

    #[test]
    fn encode_then_parse_round_trips() {
        let h = sample();
        let b = encode_header(&h, &[7; SALT_SIZE]);
        assert_eq!(parse_decrypted_header(&b), Ok(h));
    }

    #[test]
    fn each_damaged_field_is_named() {
        type Edit = fn(&mut [u8; HEADER_SIZE]);
        let table: [(Edit, HeaderError); 10] = [
            (|b| b[64] = b'X', HeaderError::BadMagic),
            (|b| b[100] ^= 1, HeaderError::HeaderCrc),
            (|b| b[300] ^= 1, HeaderError::KeyAreaCrc),
            (|b| b[69] = 9, HeaderError::UnsupportedVersion(9)),
            (|b| b[130] = 0x11, HeaderError::BadSectorSize(0x1100)),
            (|b| b[123] = 1, HeaderError::BadGeometry),
            (|b| b[71] = 0x27, HeaderError::NewerProgramRequired(0x0127)),
            (|b| b[70] = 2, HeaderError::NewerProgramRequired(0x020b)),
            (|b| b[127] = 1, HeaderError::SystemEncryption),
            (
                |b| {
                    b[127] = 2;
                    b[107] = 1; // volume size > encrypted area length
                },
                HeaderError::InPlaceEncryptionIncomplete {
                    encrypted: 1 << 20,
                    volume: (1 << 20) + 1,
                },
            ),
        ];
        for (edit, want) in table {
            let mut b = *encode_header(&sample(), &[0; SALT_SIZE]);
            edit(&mut b);
            // Re-seal the CRCs for edits that target a later check.
            if !matches!(want, HeaderError::HeaderCrc | HeaderError::KeyAreaCrc) {
                let crc = crc32fast::hash(&b[64..252]);
                b[252..256].copy_from_slice(&crc.to_be_bytes());
            }
            assert_eq!(parse_decrypted_header(&b), Err(want));
        }
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn parser_never_panics(bytes in prop::collection::vec(any::<u8>(), HEADER_SIZE)) {
            let mut b = [0u8; HEADER_SIZE];
            b.copy_from_slice(&bytes);
            let _ = parse_decrypted_header(&b);
            b[64..68].copy_from_slice(b"VERA");
            b[68..70].copy_from_slice(&5u16.to_be_bytes());
            let _ = parse_decrypted_header(&b);
        }

        #[test]
        fn encode_parse_round_trips(
            hidden in any::<u64>(), start in 0u64..1 << 40, units in 1u64..1 << 30,
            flags in any::<u32>().prop_map(|f| f & !FLAG_SYSTEM_ENCRYPTION),
            shift in 0u32..4, key in any::<[u8; 32]>(),
        ) {
            let ss = 512u32 << shift;
            let mut master_key = Zeroizing::new([0u8; KEY_AREA_SIZE]);
            master_key[..32].copy_from_slice(&key);
            let h = Header {
                version: VERSION, required_program_version: REQUIRED_PROGRAM_VERSION,
                hidden_volume_size: hidden, volume_size: units * u64::from(ss),
                data_offset: start * u64::from(ss), data_size: units * u64::from(ss),
                flags, sector_size: ss, master_key,
            };
            let b = encode_header(&h, &[1; SALT_SIZE]);
            prop_assert_eq!(parse_decrypted_header(&b), Ok(h));
        }
    }
}
