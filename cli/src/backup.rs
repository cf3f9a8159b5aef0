//! Header backup and restore, as VeraCrypt's "Backup/Restore Volume Header" do.
//!
//! Owns: the backup file (two 64 KiB header slots, normal then hidden, each a header re-sealed
//! with a fresh salt followed by random bytes; random bytes only in the hidden slot when no
//! hidden volume is backed up, so the file never tells whether one exists), and writing a
//! restored header back. Nothing is written before the source header decrypted and checked.
//! Never: changes a password or a master key.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use crate::create::{random, seal, slot, VolumeSpec};
use crate::header::{HEADER_SIZE, SALT_SIZE};
use crate::volume::{
    self, backup_offset, open_candidates, primary_offset, Credentials, HeaderCopy, Kind, Opened,
    HEADER_GROUP,
};
use crate::VolumeError;

/// Size of a header backup file: one header group.
pub const BACKUP_FILE_SIZE: u64 = HEADER_GROUP;

/// `opened`'s header, encrypted again under the same password, PRF and PIM with a new salt.
fn reseal(opened: &Opened, creds: &Credentials) -> Result<[u8; HEADER_SIZE], VolumeError> {
    let spec = VolumeSpec {
        password: creds.effective_password()?,
        prf: opened.prf,
        pim: creds.pim,
    };
    let mut salt = [0u8; SALT_SIZE];
    random(&mut salt)?;
    seal(&opened.header, &salt, &spec, opened.algorithm)
}

/// Writes a backup of `volume`'s headers to `out` (which must not exist). The outer header is
/// opened with `outer`; the hidden one with `hidden` if given, else the hidden slot is random.
pub fn backup(
    volume: &Path,
    out: &Path,
    outer: &Credentials,
    hidden: Option<&Credentials>,
) -> Result<(), VolumeError> {
    let mut file =
        File::open(volume).map_err(|e| VolumeError::Open(volume.display().to_string(), e))?;
    let normal = volume::open_file(&mut file, outer, Kind::Normal)?;
    let normal = reseal(&normal, outer)?;
    let hidden = match hidden {
        Some(c) => {
            let h = volume::open_file(&mut file, c, Kind::Hidden)?;
            Some(reseal(&h, c)?)
        }
        None => None,
    };
    let mut bytes = slot(Some(normal))?;
    bytes.extend_from_slice(&slot(hidden)?);
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(out)
        .map_err(|e| VolumeError::Open(out.display().to_string(), e))?;
    let written = f.write_all(&bytes).and_then(|()| f.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(out);
        return Err(VolumeError::Read(e));
    }
    Ok(())
}

/// Where a restored header comes from.
pub enum Source<'a> {
    /// The backup header embedded at the end of the volume.
    Embedded,
    /// A header backup file made by [`backup`] (or VeraCrypt).
    File(&'a Path),
}

/// Restores the header of `kind` that `creds` open from `source`, re-sealed with a fresh salt:
/// to the primary position (and, from a file, to the embedded backup position too). Returns
/// the byte offsets written.
pub fn restore(
    volume: &Path,
    source: Source<'_>,
    creds: &Credentials,
    kind: Kind,
) -> Result<Vec<u64>, VolumeError> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(volume)
        .map_err(|e| VolumeError::Open(volume.display().to_string(), e))?;
    let size = file.metadata().map_err(VolumeError::Read)?.len();
    if size < 2 * HEADER_GROUP {
        return Err(VolumeError::Truncated {
            size,
            need: 2 * HEADER_GROUP,
        });
    }
    let at = primary_offset(kind);
    let (opened, targets) = match source {
        Source::Embedded => {
            let candidates = [(HeaderCopy::Backup, backup_offset(kind, size))];
            let o = open_candidates(&mut file, size, &candidates, 512, creds, kind)?;
            (o, vec![at])
        }
        Source::File(path) => {
            let bytes = std::fs::read(path)
                .map_err(|e| VolumeError::Open(path.display().to_string(), e))?;
            if bytes.len() as u64 != BACKUP_FILE_SIZE {
                return Err(VolumeError::BadLayout(format!(
                    "{} is not a header backup: {} bytes, a backup has {BACKUP_FILE_SIZE}",
                    path.display(),
                    bytes.len()
                )));
            }
            let mut cursor = std::io::Cursor::new(bytes);
            // The file's slots sit where the volume's primary header group has them.
            let candidates = [(HeaderCopy::Primary, at)];
            let o = open_candidates(&mut cursor, size, &candidates, 512, creds, kind)?;
            (o, vec![at, backup_offset(kind, size)])
        }
    };
    let sealed = reseal(&opened, creds)?;
    for target in &targets {
        file.seek(SeekFrom::Start(*target))
            .and_then(|_| file.write_all(&sealed))
            .map_err(VolumeError::Read)?;
    }
    file.sync_all().map_err(VolumeError::Read)?;
    Ok(targets)
}
