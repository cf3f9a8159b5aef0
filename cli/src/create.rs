//! Creating a VeraCrypt volume file: headers, backup headers, optional hidden volume.
//!
//! Owns: the layout VeraCrypt writes for a file container (header group, data area, backup
//! header group), random salts and master keys from the OS (getrandom), and the data-area fill.
//! Never: opens existing volumes (see `volume`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::atomic::AtomicBool;

use zeroize::Zeroizing;

use crate::cipher::{Algorithm, AES};
use crate::header::{self, Header, HEADER_SIZE, KEY_AREA_SIZE, SALT_SIZE};
use crate::kdf::{self, Prf};
use crate::volume::{HEADER_GROUP, HEADER_SLOT};
use crate::VolumeError;

/// How the data area is filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Random bytes from the OS (what VeraCrypt's full format leaves: indistinguishable).
    Random,
    /// Encrypted zeros: the data area decrypts to zeros (handy for tests).
    Zero,
}

/// One volume to create in a container: its password (keyfiles already applied).
pub struct VolumeSpec {
    /// Effective password (after keyfiles).
    pub password: Zeroizing<Vec<u8>>,
    /// The PRF for the header key.
    pub prf: Prf,
    /// PIM (0: VeraCrypt's default).
    pub pim: u32,
}

/// What to create.
pub struct CreateSpec {
    /// Total container size in bytes (multiple of 512).
    pub size: u64,
    /// The outer (or only) volume.
    pub outer: VolumeSpec,
    /// A hidden volume of this size, with its own password.
    pub hidden: Option<(u64, VolumeSpec)>,
    /// Data-area fill.
    pub fill: Fill,
    /// Encryption algorithm (AES-256-XTS unless a test asks for another).
    pub algorithm: Algorithm,
}

/// Smallest data area we create.
pub const MIN_DATA: u64 = 4096;

fn random(buf: &mut [u8]) -> Result<(), VolumeError> {
    getrandom::fill(buf).map_err(|e| VolumeError::Random(e.to_string()))
}

/// Where each volume's data area lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Outer data area: start and length.
    pub outer: (u64, u64),
    /// Hidden data area: start and length, at the end of the outer data area.
    pub hidden: Option<(u64, u64)>,
}

/// Checks sizes and computes where the data areas go.
pub fn layout(size: u64, hidden: Option<u64>) -> Result<Layout, VolumeError> {
    if !size.is_multiple_of(512) {
        return Err(VolumeError::BadLayout(format!(
            "--size {size} is not a multiple of 512"
        )));
    }
    let data = size
        .checked_sub(2 * HEADER_GROUP)
        .filter(|d| *d >= MIN_DATA)
        .ok_or_else(|| {
            VolumeError::BadLayout(format!(
                "--size {size} is too small: at least {} bytes",
                2 * HEADER_GROUP + MIN_DATA
            ))
        })?;
    let hidden = match hidden {
        None => None,
        Some(h) if !h.is_multiple_of(512) || h < MIN_DATA || h > data - MIN_DATA => {
            return Err(VolumeError::BadLayout(format!(
                "--hidden-size {h} must be a multiple of 512 between {MIN_DATA} and {}",
                data - MIN_DATA
            )))
        }
        Some(h) => Some((HEADER_GROUP + data - h, h)),
    };
    Ok(Layout {
        outer: (HEADER_GROUP, data),
        hidden,
    })
}

/// A sealed header: salt in clear, bytes 64..512 encrypted as data unit 0.
fn sealed_header(
    spec: &VolumeSpec,
    alg: Algorithm,
    master_key: &[u8; KEY_AREA_SIZE],
    area: (u64, u64),
    hidden_volume_size: u64,
) -> Result<[u8; HEADER_SIZE], VolumeError> {
    let mut salt = [0u8; SALT_SIZE];
    random(&mut salt)?;
    let h = Header {
        version: header::VERSION,
        required_program_version: header::REQUIRED_PROGRAM_VERSION,
        hidden_volume_size,
        volume_size: area.1,
        data_offset: area.0,
        data_size: area.1,
        flags: 0,
        sector_size: 512,
        master_key: Zeroizing::new(*master_key),
    };
    let mut bytes = header::encode_header(&h, &salt);
    let mut key = Zeroizing::new(vec![0u8; alg.key_len()]);
    let never = AtomicBool::new(false);
    kdf::derive(
        spec.prf,
        &spec.password,
        &salt,
        kdf::iterations(spec.pim),
        &mut key,
        &never,
    )
    .map_err(|_| VolumeError::BadLayout("key derivation cancelled".into()))?;
    alg.encrypt(&key, &mut bytes[SALT_SIZE..], 0);
    Ok(*bytes)
}

/// A header slot: the header followed by random bytes up to 64 KiB.
fn slot(header: Option<[u8; HEADER_SIZE]>) -> Result<Vec<u8>, VolumeError> {
    let mut s = vec![0u8; HEADER_SLOT as usize];
    random(&mut s)?;
    if let Some(h) = header {
        s[..HEADER_SIZE].copy_from_slice(&h);
    }
    Ok(s)
}

/// Creates the container at `path` (which must not exist).
pub fn create(path: &Path, spec: &CreateSpec) -> Result<Layout, VolumeError> {
    let lay = layout(spec.size, spec.hidden.as_ref().map(|h| h.0))?;
    let alg = spec.algorithm;
    let mut outer_key = Zeroizing::new([0u8; KEY_AREA_SIZE]);
    random(&mut outer_key[..])?;
    let mut hidden_key = Zeroizing::new([0u8; KEY_AREA_SIZE]);
    random(&mut hidden_key[..])?;

    let outer_primary = sealed_header(&spec.outer, alg, &outer_key, lay.outer, 0)?;
    let outer_backup = sealed_header(&spec.outer, alg, &outer_key, lay.outer, 0)?;
    let (hidden_primary, hidden_backup) = match (&spec.hidden, lay.hidden) {
        (Some((_, hs)), Some(area)) => (
            Some(sealed_header(hs, alg, &hidden_key, area, area.1)?),
            Some(sealed_header(hs, alg, &hidden_key, area, area.1)?),
        ),
        _ => (None, None),
    };
    let keys = (outer_key, hidden_key);
    let headers = [
        Some(outer_primary),
        Some(outer_backup),
        hidden_primary,
        hidden_backup,
    ];

    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| VolumeError::Open(path.display().to_string(), e))?;
    let written = write_container(file, spec, &lay, &keys, &headers);
    if written.is_err() {
        // Leave no half-written container behind (e.g. the disk filled up).
        let _ = std::fs::remove_file(path);
    }
    written.map(|()| lay)
}

/// The four sealed headers: outer primary/backup, hidden primary/backup (if any).
type Headers = [Option<[u8; HEADER_SIZE]>; 4];

fn write_container(
    file: File,
    spec: &CreateSpec,
    lay: &Layout,
    keys: &(
        Zeroizing<[u8; KEY_AREA_SIZE]>,
        Zeroizing<[u8; KEY_AREA_SIZE]>,
    ),
    headers: &Headers,
) -> Result<(), VolumeError> {
    let alg = spec.algorithm;
    let (outer_key, hidden_key) = keys;
    let [outer_primary, outer_backup, hidden_primary, hidden_backup] = *headers;
    let mut w = BufWriter::new(file);
    let write = |w: &mut BufWriter<File>, b: &[u8]| w.write_all(b).map_err(VolumeError::Read);
    write(&mut w, &slot(outer_primary)?)?;
    write(&mut w, &slot(hidden_primary)?)?;

    // Data area, in chunks; the hidden volume's part is filled under its own key.
    const CHUNK: u64 = 1 << 20;
    let mut at = lay.outer.0;
    let end = lay.outer.0 + lay.outer.1;
    let mut buf = vec![0u8; CHUNK as usize];
    while at < end {
        let in_hidden = lay.hidden.is_some_and(|(hs, _)| at >= hs);
        let boundary = match lay.hidden {
            Some((hs, _)) if at < hs => hs,
            _ => end,
        };
        let n = (boundary - at).min(CHUNK) as usize;
        let chunk = &mut buf[..n];
        match spec.fill {
            Fill::Random => random(chunk)?,
            Fill::Zero => {
                chunk.fill(0);
                let key: &[u8] = if in_hidden {
                    &hidden_key[..]
                } else {
                    &outer_key[..]
                };
                if alg == AES {
                    let mut k = Zeroizing::new([0u8; 64]);
                    k.copy_from_slice(&key[..64]);
                    vcdirect::crypto::XtsCipher::new(&k).encrypt(chunk, at / 512);
                } else {
                    alg.encrypt(key, chunk, at / 512);
                }
            }
        }
        write(&mut w, chunk)?;
        at += n as u64;
    }
    write(&mut w, &slot(outer_backup)?)?;
    write(&mut w, &slot(hidden_backup)?)?;
    let file = w
        .into_inner()
        .map_err(|e| VolumeError::Read(e.into_error()))?;
    file.sync_all().map_err(VolumeError::Read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_puts_the_hidden_volume_at_the_end_of_the_outer_data_area() {
        let l = layout(1 << 20, Some(65536)).unwrap();
        assert_eq!(l.outer, (131_072, (1 << 20) - 262_144));
        assert_eq!(l.hidden, Some(((1 << 20) - 131_072 - 65536, 65536)));
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert!(layout(1000, None).is_err());
        assert!(layout(262_144, None).is_err());
        assert!(layout(1 << 20, Some(1 << 20)).is_err());
        assert!(layout(1 << 20, Some(1000)).is_err());
    }
}
