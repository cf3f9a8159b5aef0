//! Creating a VeraCrypt volume file: headers, backup headers, optional hidden volume.
//!
//! Owns: the layout VeraCrypt writes for a file container (header group, data area, backup
//! header group), random salts and master keys from the OS (getrandom), the data-area fill,
//! and the order a container comes into being: VeraCrypt's size limit and the file system's
//! free space checked first, then the fill, the backup header group and the primary header
//! group written in that order, each synced, under a temporary name in the same folder that
//! is renamed to the target only when complete, without ever replacing a file. A create
//! killed at any point leaves no file at the target's name.
//! Never: opens existing volumes (see `volume`).

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use zeroize::Zeroizing;

use crate::cipher::{Algorithm, Xts};
use crate::fat;
use crate::header::{self, Header, HEADER_SIZE, KEY_AREA_SIZE, SALT_SIZE};
use crate::kdf::{self, Prf};
use crate::volume::{DataArea, HEADER_GROUP, HEADER_SLOT};
use crate::VolumeError;

/// How the data area is filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// Random bytes from the OS (what VeraCrypt's full format leaves: indistinguishable).
    Random,
    /// Encrypted zeros: the data area decrypts to zeros (handy for tests). Refused with a
    /// hidden volume, which would stand out.
    Zero,
}

/// The file system written into the outer (or only) volume at creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Filesystem {
    /// FAT12/16/32 (by size, as VeraCrypt chooses), written through the volume's encryption.
    Fat,
    /// None: the data area is only the fill.
    None,
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
    /// Encryption algorithm of the outer (or only) volume: any of VeraCrypt's
    /// (`vcctl volume create --cipher`).
    pub algorithm: Algorithm,
    /// Encryption algorithm of the hidden volume (`--hidden-cipher`; `None`: the outer's).
    pub hidden_algorithm: Option<Algorithm>,
    /// The outer volume's file system.
    pub filesystem: Filesystem,
}

/// Smallest data area we create.
pub const MIN_DATA: u64 = 4096;

/// VeraCrypt's largest volume: TC_MAX_VOLUME_SIZE, one pebibyte (BYTES_PER_PB), the security
/// bound of XTS with a 128-bit block cipher.
pub const MAX_VOLUME_SIZE: u64 = 1 << 50;

/// Fills `buf` from the OS random generator.
pub fn random(buf: &mut [u8]) -> Result<(), VolumeError> {
    getrandom::fill(buf).map_err(|e| VolumeError::Random(e.to_string()))
}

/// Where each volume's data area lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Outer data area: start and length.
    pub outer: (u64, u64),
    /// Hidden data area: start and length. The hidden volume (its data area plus VeraCrypt's
    /// reserved area, see [`hidden_reserved`]) ends where the outer data area ends.
    pub hidden: Option<(u64, u64)>,
}

/// Hidden volumes of this size or more keep the larger reserved area (VeraCrypt's "small
/// volume" threshold, 2 MiB).
pub const HIDDEN_SMALL_THRESHOLD: u64 = 2 << 20;
/// Reserved area at the end of the outer volume below the threshold: the largest sector size.
pub const HIDDEN_RESERVED_SMALL: u64 = 4096;
/// Reserved area at or above the threshold: one header group (keeps the hidden data area a
/// multiple of every supported sector size).
pub const HIDDEN_RESERVED_LARGE: u64 = HEADER_GROUP;

/// The bytes VeraCrypt 1.26 leaves free at the end of the outer data area, after the hidden
/// data area, for a hidden volume of `hidden_size` bytes (the size asked for, reserved area
/// included): the outer filesystem's last sectors (NTFS backup boot sector, FAT's zeroed last
/// sector) land there, never in the hidden volume.
pub fn hidden_reserved(hidden_size: u64) -> u64 {
    if hidden_size < HIDDEN_SMALL_THRESHOLD {
        HIDDEN_RESERVED_SMALL
    } else {
        HIDDEN_RESERVED_LARGE
    }
}

/// Checks sizes and computes where the data areas go. `hidden` is the hidden volume's size as
/// VeraCrypt asks for it: the hidden volume occupies the last `hidden` bytes of the outer data
/// area, and its data area is that minus [`hidden_reserved`] (the size in every size field of
/// the hidden header).
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
        Some(h) => {
            let reserved = hidden_reserved(h);
            let min = MIN_DATA + reserved;
            if !h.is_multiple_of(512) || h < min || h > data.saturating_sub(MIN_DATA) {
                return Err(VolumeError::BadLayout(format!(
                    "--hidden-size {h} must be a multiple of 512 between {min} and {} \
                     (the outer volume keeps at least {MIN_DATA} bytes)",
                    data.saturating_sub(MIN_DATA)
                )));
            }
            Some((HEADER_GROUP + data - h, h - reserved))
        }
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
    seal(&h, &salt, spec, alg)
}

/// Encodes `h` with `salt` and encrypts it under the key `spec`'s password, PRF and PIM derive
/// (used for new headers and to re-seal an opened one with a fresh salt).
pub fn seal(
    h: &Header,
    salt: &[u8; SALT_SIZE],
    spec: &VolumeSpec,
    alg: Algorithm,
) -> Result<[u8; HEADER_SIZE], VolumeError> {
    let mut bytes = header::encode_header(h, salt);
    let mut key = Zeroizing::new(vec![0u8; alg.key_len()]);
    let never = AtomicBool::new(false);
    kdf::header_key(spec.prf, &spec.password, salt, spec.pim, &mut key, &never).map_err(
        |e| match e {
            kdf::KdfError::Argon2(e) => VolumeError::Kdf(e),
            kdf::KdfError::Cancelled => VolumeError::BadLayout("key derivation cancelled".into()),
        },
    )?;
    alg.encrypt(&key, &mut bytes[SALT_SIZE..], 0);
    Ok(*bytes)
}

/// VeraCrypt 1.26.29's rule for a new Argon2 header: a PIM below its default of 12 (PIM 0 is
/// the default) needs a password of at least 20 bytes (keyfiles applied: a keyfile lengthens
/// the password to 64 bytes or more, as VeraCrypt's keyfile pool does). Checked before
/// anything is derived or written.
pub fn check_argon2_password(spec: &VolumeSpec) -> Result<(), VolumeError> {
    let short = spec.prf.is_argon2()
        && (1..12).contains(&spec.pim)
        && spec.password.len() < 20
        && !crate::faults::is_on(crate::faults::Fault::Argon2AllowsShortPassword);
    if short {
        return Err(VolumeError::Argon2ShortPassword {
            pim: spec.pim,
            length: spec.password.len(),
        });
    }
    Ok(())
}

/// A header slot: the header followed by random bytes up to 64 KiB.
pub fn slot(header: Option<[u8; HEADER_SIZE]>) -> Result<Vec<u8>, VolumeError> {
    let mut s = vec![0u8; HEADER_SLOT as usize];
    random(&mut s)?;
    if let Some(h) = header {
        s[..HEADER_SIZE].copy_from_slice(&h);
    }
    Ok(s)
}

/// Creates the container at `path` (which must not exist): nothing is written when the size
/// is over [`MAX_VOLUME_SIZE`] or the file system has less free space than it; the container
/// is written under a temporary name in the same folder and renamed to `path` when complete
/// (never replacing a file that appeared meanwhile); on any error the temporary file is
/// removed.
pub fn create(path: &Path, spec: &CreateSpec) -> Result<Layout, VolumeError> {
    create_with_progress(path, spec, &mut |_, _| {})
}

/// [`create`], telling `progress` the bytes of the data area filled so far and their total
/// after each chunk (the long part of a create).
pub fn create_with_progress(
    path: &Path,
    spec: &CreateSpec,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<Layout, VolumeError> {
    if spec.size > MAX_VOLUME_SIZE {
        return Err(VolumeError::BadLayout(format!(
            "--size {} is over VeraCrypt's largest volume, {MAX_VOLUME_SIZE} bytes (1 PiB)",
            spec.size
        )));
    }
    let lay = layout(spec.size, spec.hidden.as_ref().map(|h| h.0))?;
    check_argon2_password(&spec.outer)?;
    if let Some((_, hidden)) = &spec.hidden {
        check_argon2_password(hidden)?;
    }
    if spec.hidden.is_some() && spec.fill == Fill::Zero {
        // Zeros under the outer key would make the hidden volume the only non-zero region
        // anyone with the outer password sees (W15).
        return Err(VolumeError::BadLayout(
            "--fill zero cannot be used with --hidden-size: the hidden volume would stand out \
             from the zero-filled free space; use --fill random"
                .into(),
        ));
    }
    let exists = |p: &Path| {
        VolumeError::Open(
            p.display().to_string(),
            std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        )
    };
    if path.symlink_metadata().is_ok() {
        return Err(exists(path));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let free =
        fs4::available_space(&dir).map_err(|e| VolumeError::Open(dir.display().to_string(), e))?;
    if free < spec.size {
        return Err(VolumeError::BadLayout(format!(
            "not enough free space for --size {}: {free} bytes free on {}'s file system",
            spec.size,
            dir.display()
        )));
    }
    let volume_id = check_filesystem(spec, &lay)?;
    let alg = spec.algorithm;
    let hidden_alg = spec.hidden_algorithm.unwrap_or(alg);
    let mut outer_key = Zeroizing::new([0u8; KEY_AREA_SIZE]);
    random(&mut outer_key[..])?;
    let mut hidden_key = Zeroizing::new([0u8; KEY_AREA_SIZE]);
    random(&mut hidden_key[..])?;

    let outer_primary = sealed_header(&spec.outer, alg, &outer_key, lay.outer, 0)?;
    let outer_backup = sealed_header(&spec.outer, alg, &outer_key, lay.outer, 0)?;
    let (hidden_primary, hidden_backup) = match (&spec.hidden, lay.hidden) {
        (Some((_, hs)), Some(area)) => (
            Some(sealed_header(hs, hidden_alg, &hidden_key, area, area.1)?),
            Some(sealed_header(hs, hidden_alg, &hidden_key, area, area.1)?),
        ),
        _ => (None, None),
    };
    drop(hidden_key);
    let headers = [
        Some(outer_primary),
        Some(outer_backup),
        hidden_primary,
        hidden_backup,
    ];

    let temp = temporary_name(path, &dir);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&temp)
        .map_err(|e| VolumeError::Open(temp.display().to_string(), e))?;
    let written = write_container(file, spec, &lay, &outer_key, &headers, volume_id, progress)
        .and_then(|()| {
            rename_no_replace(&temp, path).map_err(|e| match e.kind() {
                std::io::ErrorKind::AlreadyExists => exists(path),
                _ => VolumeError::Open(path.display().to_string(), e),
            })
        });
    if written.is_err() {
        // Leave no half-written container behind (the disk filled up, the target appeared).
        let _ = std::fs::remove_file(&temp);
    }
    written.map(|()| lay)
}

/// `.NAME.vcctl-partial-PID` beside the target (same folder: the rename stays on one file
/// system).
fn temporary_name(path: &Path, dir: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "volume".into());
    dir.join(format!(".{name}.vcctl-partial-{}", std::process::id()))
}

/// Renames `from` to `to` unless `to` exists (ErrorKind::AlreadyExists then), atomically:
/// a hard link, which never replaces its target, then the temporary name removed; where the
/// file system has no hard links, a rename after checking the target is absent.
pub fn rename_no_replace(from: &Path, to: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => std::fs::remove_file(from),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => {
            // No hard links here (FAT, exFAT): the check and the rename are two steps.
            if to.symlink_metadata().is_ok() {
                return Err(std::io::Error::from(std::io::ErrorKind::AlreadyExists));
            }
            std::fs::rename(from, to)
        }
    }
}

/// The four sealed headers: outer primary/backup, hidden primary/backup (if any).
type Headers = [Option<[u8; HEADER_SIZE]>; 4];

/// Before anything is written: `--hidden-size` needs a file system to be placed after
/// (refused with `--filesystem none`), and with FAT it may reach back no further than
/// VeraCrypt's largest hidden volume for the new file system ([`fat::max_hidden_size`], which
/// always ends after the last used cluster). The FAT is formatted first into memory (only its
/// non-zero sectors are kept) to learn its facts. Returns the FAT's volume id (random, as
/// VeraCrypt's) for the real format.
fn check_filesystem(spec: &CreateSpec, lay: &Layout) -> Result<u32, VolumeError> {
    let mut id = [0u8; 4];
    random(&mut id)?;
    let volume_id = u32::from_le_bytes(id);
    match spec.filesystem {
        Filesystem::None => {
            if spec.hidden.is_some() {
                return Err(VolumeError::BadLayout(
                    "--hidden-size needs --filesystem fat: the hidden volume is placed after the \
                     outer file system's last used cluster, and the outer volume must be \
                     formatted before it is used (a later format would overwrite the hidden \
                     volume)"
                        .into(),
                ));
            }
        }
        Filesystem::Fat => {
            let data = lay.outer.1;
            let mut image = SparseImage::new(data);
            fat::format(&mut image, data, volume_id)?;
            if let Some(h) = spec.hidden.as_ref().map(|h| h.0) {
                let facts = fat::read_facts(&mut image, data, 512)?;
                let max = fat::max_hidden_size(&facts, data);
                if h > max {
                    return Err(too_large("--hidden-size", h, max, &facts));
                }
            }
        }
    }
    Ok(volume_id)
}

/// The one-line refusal of a hidden size over VeraCrypt's maximum for the outer FAT.
fn too_large(option: &str, h: u64, max: u64, facts: &fat::FatFacts) -> VolumeError {
    VolumeError::BadLayout(format!(
        "{option} {h} is over the largest hidden volume that fits after the outer {} file \
         system's last used cluster (cluster {}, used space ends at byte {} of the outer data \
         area): at most {max} bytes, VeraCrypt's rule",
        facts.name(),
        facts.last_used_cluster,
        facts.used_end()
    ))
}

/// A data area in memory that keeps only the sectors written non-zero (what formatting a FAT
/// writes is small; the zeros of its tables are not kept). Reads of other sectors give zeros.
struct SparseImage {
    size: u64,
    pos: u64,
    sectors: std::collections::BTreeMap<u64, Box<[u8; 512]>>,
}

impl SparseImage {
    fn new(size: u64) -> SparseImage {
        SparseImage {
            size,
            pos: 0,
            sectors: std::collections::BTreeMap::new(),
        }
    }
}

impl std::io::Read for SparseImage {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos >= self.size || out.is_empty() {
            return Ok(0);
        }
        let in_sector = (self.pos % 512) as usize;
        let n = out
            .len()
            .min(512 - in_sector)
            .min((self.size - self.pos) as usize);
        match self.sectors.get(&(self.pos / 512)) {
            Some(s) => out[..n].copy_from_slice(&s[in_sector..in_sector + n]),
            None => out[..n].fill(0),
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl Write for SparseImage {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.pos >= self.size {
            return Err(std::io::Error::from(std::io::ErrorKind::WriteZero));
        }
        let in_sector = (self.pos % 512) as usize;
        let n = data
            .len()
            .min(512 - in_sector)
            .min((self.size - self.pos) as usize);
        let index = self.pos / 512;
        let part = &data[..n];
        match self.sectors.get_mut(&index) {
            Some(s) => s[in_sector..in_sector + n].copy_from_slice(part),
            None if part.iter().all(|b| *b == 0) => {}
            None => {
                let mut s = Box::new([0u8; 512]);
                s[in_sector..in_sector + n].copy_from_slice(part);
                self.sectors.insert(index, s);
            }
        }
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Seek for SparseImage {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        Ok(self.pos)
    }
}

/// Fills the data area `area` (host start, length) of a container: random bytes from the OS,
/// or zeros encrypted under `key` with `alg`; tells `progress` the bytes done and the total
/// after each 1 MiB chunk. Used for the outer data area at create and for a hidden volume's
/// data area at add-hidden.
fn fill_area<W: Write + Seek>(
    w: &mut W,
    area: (u64, u64),
    fill: Fill,
    alg: Algorithm,
    key: &[u8; KEY_AREA_SIZE],
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), VolumeError> {
    const CHUNK: u64 = 1 << 20;
    let (start, len) = area;
    let end = start + len;
    w.seek(SeekFrom::Start(start)).map_err(VolumeError::Read)?;
    let mut buf = vec![0u8; CHUNK.min(len) as usize];
    let mut at = start;
    while at < end {
        let n = (end - at).min(CHUNK) as usize;
        let chunk = &mut buf[..n];
        match fill {
            Fill::Random => random(chunk)?,
            Fill::Zero => {
                // Only without a hidden volume (refused in `create`).
                chunk.fill(0);
                alg.encrypt(&key[..], chunk, at / 512);
            }
        }
        if crate::faults::is_on(crate::faults::Fault::FillWritesZeros) {
            // Test builds only: the bug the raw-bytes check must catch.
            chunk.fill(0);
        }
        w.write_all(chunk).map_err(VolumeError::Read)?;
        at += n as u64;
        progress(at - start, len);
    }
    Ok(())
}

/// Writes `bytes` at `at` of `file` and syncs them to the medium.
fn write_synced(file: &mut File, at: u64, bytes: &[u8]) -> Result<(), VolumeError> {
    file.seek(SeekFrom::Start(at))
        .and_then(|_| file.write_all(bytes))
        .and_then(|()| file.sync_data())
        .map_err(VolumeError::Read)
}

/// Writes the container into `file`: the data-area fill and the outer file system, then the
/// backup header group, then the primary header group, each synced before the next, so an
/// interrupted write never leaves a primary header in front of an incomplete volume.
fn write_container(
    file: File,
    spec: &CreateSpec,
    lay: &Layout,
    outer_key: &Zeroizing<[u8; KEY_AREA_SIZE]>,
    headers: &Headers,
    volume_id: u32,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(), VolumeError> {
    let alg = spec.algorithm;
    let [outer_primary, outer_backup, hidden_primary, hidden_backup] = *headers;
    // Data area, in chunks. Random fill covers the hidden volume's area too, so from the
    // outer volume (decrypted with its key) free space and hidden volume both look random.
    let mut w = BufWriter::new(file);
    fill_area(&mut w, lay.outer, spec.fill, alg, outer_key, progress)?;
    let mut file = w
        .into_inner()
        .map_err(|e| VolumeError::Read(e.into_error()))?;
    file.sync_data().map_err(VolumeError::Read)?;
    if spec.filesystem == Filesystem::Fat {
        // Through the outer volume's own encryption, as a mounted volume would be formatted.
        let mut area = DataArea::new(&mut file, alg, outer_key, lay.outer.0, lay.outer.1);
        fat::format(&mut area, lay.outer.1, volume_id)?;
        file.sync_data().map_err(VolumeError::Read)?;
    }
    // The backup header group at the end, then the primary group at the start.
    let end = lay.outer.0 + lay.outer.1;
    let mut group = slot(outer_backup)?;
    group.extend_from_slice(&slot(hidden_backup)?);
    write_synced(&mut file, end, &group)?;
    let mut group = slot(outer_primary)?;
    group.extend_from_slice(&slot(hidden_primary)?);
    write_synced(&mut file, 0, &group)?;
    file.sync_all().map_err(VolumeError::Read)
}

/// What `add-hidden` found in the outer volume, before it writes anything.
pub struct Room {
    /// The outer volume's FAT.
    pub facts: fat::FatFacts,
    /// The outer data area: host start and length.
    pub outer: (u64, u64),
    /// VeraCrypt's largest hidden volume for it ([`fat::max_hidden_size`]).
    pub max: u64,
}

/// Adds a hidden volume to the container at `path`, as VeraCrypt's hidden-volume wizard does
/// once the decoy files are in the outer volume: opens the file for writing, exclusively
/// ([`crate::volume::open_exclusive`]), opens the outer volume with `outer`, reads its FAT and
/// computes the largest hidden volume after its used clusters ([`fat::max_hidden_size`]);
/// `size` (`None`: that maximum) over it is refused. `found` is told the outer volume and
/// what was found before anything is written. Then, as [`create`] writes a hidden volume: the
/// hidden volume's footprint is the last `size` bytes of the outer data area ([`layout`]),
/// its data area is filled with random bytes, then its backup header (the hidden slot of the
/// backup group) and its primary header (at 65536) are written, each synced. Any hidden
/// volume already in that space is destroyed (it cannot be detected). Returns the layout
/// and what was found (`used_end` and `max` for the user).
pub fn add_hidden(
    path: &Path,
    outer: &crate::volume::Credentials,
    size: Option<u64>,
    hidden: &crate::volume::Credentials,
    hidden_algorithm: Option<Algorithm>,
    found: &mut dyn FnMut(&crate::volume::Opened, &Room),
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(Layout, Room), VolumeError> {
    // The hidden keyfiles are read before anything else (a missing one stops here).
    let hidden_password = hidden.effective_password()?;
    if let Some(prf) = hidden.prf {
        check_argon2_password(&VolumeSpec {
            password: hidden_password.clone(),
            prf,
            pim: hidden.pim,
        })?;
    }
    let mut file = crate::volume::open_exclusive(path)?;
    let container = file.metadata().map_err(VolumeError::Read)?.len();
    let opened = crate::volume::open_file(&mut file, outer, crate::volume::Kind::Normal)?;
    let h = &opened.header;
    let data = container.saturating_sub(2 * HEADER_GROUP);
    if (h.data_offset, h.data_size) != (HEADER_GROUP, data) {
        return Err(VolumeError::BadLayout(format!(
            "the outer volume's data area ({} bytes at {}) is not the whole space between the \
             header groups of this {container}-byte file ({data} bytes at {HEADER_GROUP}); \
             add-hidden places hidden volumes only in such containers",
            h.data_size, h.data_offset
        )));
    }
    let sector = u64::from(h.sector_size);
    let facts = fat::read_facts(&mut DataArea::of(&mut file, &opened), data, sector)?;
    let room = Room {
        facts,
        outer: (HEADER_GROUP, data),
        max: fat::max_hidden_size(&facts, data),
    };
    found(&opened, &room);
    let want = size.unwrap_or(room.max);
    if want > room.max {
        return Err(too_large("--size", want, room.max, &facts));
    }
    let lay = layout(container, Some(want)).map_err(|e| match size {
        None => VolumeError::BadLayout(format!(
            "no room for a hidden volume: the largest that fits after the outer {} file \
             system's used clusters is {} bytes ({e})",
            facts.name(),
            room.max
        )),
        Some(_) => VolumeError::BadLayout(e.to_string().replace("--hidden-size", "--size")),
    })?;
    let Some(area) = lay.hidden else {
        return Err(VolumeError::BadLayout("no hidden volume laid out".into()));
    };
    // VeraCrypt's maximum always ends after the last used cluster; checked all the same.
    if area.0 < HEADER_GROUP + facts.used_end() {
        return Err(VolumeError::BadLayout(format!(
            "--size {want} would overlap the outer {} file system's used clusters (used space \
             ends at byte {} of the outer data area)",
            facts.name(),
            facts.used_end()
        )));
    }
    // As `create` writes a hidden volume: its own master key, two headers with fresh salts;
    // the hidden header's PRF is its own (--hidden-prf) or the one the outer header opened with.
    let hidden = VolumeSpec {
        password: hidden_password,
        prf: hidden.prf.unwrap_or(opened.prf),
        pim: hidden.pim,
    };
    check_argon2_password(&hidden)?;
    // The hidden volume's algorithm is its own (--hidden-cipher) or the outer's, as VeraCrypt
    // lets the two differ.
    let alg = hidden_algorithm.unwrap_or(opened.algorithm);
    let mut key = Zeroizing::new([0u8; KEY_AREA_SIZE]);
    random(&mut key[..])?;
    let primary = sealed_header(&hidden, alg, &key, area, area.1)?;
    let backup = sealed_header(&hidden, alg, &key, area, area.1)?;
    fill_area(&mut file, area, Fill::Random, alg, &key, progress)?;
    drop(key);
    file.sync_data().map_err(VolumeError::Read)?;
    write_synced(&mut file, container - HEADER_SLOT, &slot(Some(backup))?)?;
    write_synced(&mut file, HEADER_SLOT, &slot(Some(primary))?)?;
    file.sync_all().map_err(VolumeError::Read)?;
    Ok((lay, room))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn w15_layout_leaves_veracrypts_reserved_area_after_the_hidden_data() {
        // Below the 2 MiB threshold: 4 KiB reserved.
        let l = layout(1 << 20, Some(65536)).unwrap();
        assert_eq!(l.outer, (131_072, (1 << 20) - 262_144));
        assert_eq!(l.hidden, Some(((1 << 20) - 131_072 - 65536, 65536 - 4096)));
        // At and above it: one header group (128 KiB) reserved.
        for (size, h) in [(8u64 << 20, 2u64 << 20), (64 << 20, 10 << 20)] {
            let l = layout(size, Some(h)).unwrap();
            let (hs, hl) = l.hidden.unwrap();
            assert_eq!(hs, size - 131_072 - h);
            assert_eq!(hl, h - 131_072);
            assert_eq!(hs + hl + 131_072, l.outer.0 + l.outer.1);
        }
        let (hs, hl) = layout(8 << 20, Some((2 << 20) - 512))
            .unwrap()
            .hidden
            .unwrap();
        assert_eq!(hs + hl + 4096, (8 << 20) - 131_072);
    }

    #[test]
    fn argon2_short_password_rule_is_veracrypts_pim_below_12() {
        let spec = |prf, pim, len: usize| VolumeSpec {
            password: Zeroizing::new(vec![b'x'; len]),
            prf,
            pim,
        };
        for pim in 1..12 {
            assert!(check_argon2_password(&spec(Prf::Argon2, pim, 19)).is_err());
            assert!(check_argon2_password(&spec(Prf::Argon2, pim, 20)).is_ok());
        }
        // PIM 0 is VeraCrypt's default, 12; 12 and more need no long password; PBKDF2 is
        // not held to this rule.
        for pim in [0, 12, 13, 100] {
            assert!(check_argon2_password(&spec(Prf::Argon2, pim, 1)).is_ok());
        }
        assert!(check_argon2_password(&spec(Prf::Sha512, 1, 1)).is_ok());
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert!(layout(1000, None).is_err());
        assert!(layout(262_144, None).is_err());
        assert!(layout(1 << 20, Some(1 << 20)).is_err());
        assert!(layout(1 << 20, Some(1000)).is_err());
        // The data area must stay MIN_DATA after the reserved area is taken.
        assert!(layout(1 << 20, Some(4096 + 4096 - 512)).is_err());
        assert!(layout(1 << 20, Some(8192)).is_ok());
    }
}
