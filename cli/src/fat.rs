//! The outer volume's FAT file system: written at `create` (through the volume's own
//! encryption), and read by `add-hidden` to find the room after its last used cluster.
//!
//! Owns: VeraCrypt's choice of cluster size (and so of FAT12/16/32, which follows from the
//! cluster count), recognising what file system a data area holds (FAT is read; NTFS, exFAT,
//! ext2/3/4, Btrfs and XFS are named and refused; anything else is "not recognised", never
//! guessed), and VeraCrypt's largest hidden volume for a FAT outer volume.
//! Never: writes into an existing file system (the tests copy files with the `fatfs` crate).

use std::io::{Read, Seek, SeekFrom, Write};

use crate::VolumeError;

/// VeraCrypt's largest FAT cluster (TC_MAX_FAT_CLUSTER_SIZE, 256 KiB).
const MAX_CLUSTER: u64 = 256 << 10;

/// The wizard's reserve is capped at 10 MiB (VeraCrypt: 10 * BYTES_PER_MB).
const MAX_RESERVE: u64 = 10 << 20;

/// The cluster size VeraCrypt's FAT formatter picks for a volume of `size` bytes with
/// `sector`-byte sectors (VeraCrypt 1.26, src/Core/FatFormatter.cpp, GetFatParams, "default"
/// cluster size): 512 bytes below 1 MiB, 1 KiB from 1 MiB, 2 KiB from 256 MiB, 4 KiB from
/// 512 MiB, 8 KiB from 16 GiB, doubling at 32, 64 and 128 GiB, 128 KiB from 512 GiB, 256 KiB
/// from 2 TiB; at least one sector, at most 256 KiB and 128 sectors; one sector for volumes up
/// to 1 MiB. The FAT type follows from the cluster count, as in VeraCrypt: FAT12 below 4085
/// clusters, FAT16 below 65525, FAT32 above.
pub fn veracrypt_cluster_size(size: u64, sector: u64) -> u64 {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    let table = [
        (2 << 40, 256 * KIB),
        (512 * GIB, 128 * KIB),
        (128 * GIB, 64 * KIB),
        (64 * GIB, 32 * KIB),
        (32 * GIB, 16 * KIB),
        (16 * GIB, 8 * KIB),
        (512 * MIB, 4 * KIB),
        (256 * MIB, 2 * KIB),
        (MIB, KIB),
    ];
    let bytes = table
        .iter()
        .find(|(from, _)| size >= *from)
        .map_or(512, |(_, c)| *c);
    let mut sectors = (bytes / sector).max(1);
    if sectors * sector > MAX_CLUSTER {
        sectors = MAX_CLUSTER / sector;
    }
    sectors = sectors.min(128);
    if size <= MAX_CLUSTER * 4 {
        sectors = 1;
    }
    sectors * sector
}

/// Formats a FAT file system over `area` (a data area seen decrypted, `size` bytes, position
/// 0) with VeraCrypt's cluster size and the label `NO NAME`, as VeraCrypt's quick format does.
/// A data area FAT cannot hold (too small, too many sectors) is a one-line error naming
/// `--filesystem none`.
pub fn format<D: Read + Write + Seek>(
    area: &mut D,
    size: u64,
    volume_id: u32,
) -> Result<(), VolumeError> {
    let cannot = |why: &str| {
        VolumeError::BadLayout(format!(
            "cannot put a FAT file system on a {size}-byte data area ({why}); use a different \
             --size or --filesystem none"
        ))
    };
    let sectors =
        u32::try_from(size / 512).map_err(|_| cannot("FAT holds at most 2^32 - 1 sectors"))?;
    let options = fatfs::FormatVolumeOptions::new()
        .bytes_per_sector(512)
        .total_sectors(sectors)
        .bytes_per_cluster(veracrypt_cluster_size(size, 512) as u32)
        .volume_id(volume_id)
        .volume_label(*b"NO NAME    ");
    fatfs::format_volume(&mut *area, options).map_err(|e| cannot(&e.to_string()))?;
    let g = geometry(area, size, 512)?;
    clear_entries_after_clusters(area, &g)?;
    area.flush().map_err(VolumeError::Read)
}

/// What `add-hidden` needs to know of a FAT file system (all offsets in bytes from the start
/// of the data area).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FatFacts {
    /// 12, 16 or 32.
    pub fat_type: u8,
    /// Bytes per sector (the volume's).
    pub sector_size: u64,
    /// Bytes per cluster.
    pub cluster_size: u64,
    /// Where the first FAT starts.
    pub fat_start: u64,
    /// Bytes of one FAT.
    pub fat_size: u64,
    /// Where cluster 2 (the first data cluster) starts.
    pub data_start: u64,
    /// The highest cluster whose FAT entry is not zero (in use; 1 when no data cluster is).
    pub last_used_cluster: u64,
    /// The cluster number VeraCrypt's scan derives: the byte offset in the FAT of the last
    /// non-zero 4-byte word, over 1.5 (FAT12), 2 (FAT16) or 4 (FAT32).
    pub scan_cluster: u64,
}

impl FatFacts {
    /// Where the last used cluster ends (the first byte after the file system's used space;
    /// the end of the FAT and root directory when no data cluster is used).
    pub fn used_end(&self) -> u64 {
        self.data_start + self.last_used_cluster.saturating_sub(1) * self.cluster_size
    }

    /// `FAT12`, `FAT16` or `FAT32`.
    pub fn name(&self) -> String {
        format!("FAT{}", self.fat_type)
    }
}

/// The largest hidden volume (its size as `--hidden-size` / `add-hidden --size` take it: the
/// hidden volume's whole footprint, reserved end area included) that fits after the used
/// clusters of the outer FAT `facts` in an outer data area of `outer_size` bytes, by
/// VeraCrypt's rule:
/// - VeraCrypt 1.26, src/Core/CoreBase.cpp, `CoreBase::GetMaxHiddenVolumeSize`: the data area
///   after the FAT and root directory, less one cluster ("FAT entries may span over sector
///   boundaries"), less the scan's cluster number times the cluster size (0 when that leaves
///   nothing);
/// - src/Main/Forms/VolumeCreationWizard.cpp, `VolumeCreationWizard::ProcessPageChangeRequest`
///   (step OuterVolumeContents): at most the outer data size, less a reserve of the outer data
///   size / 200 (at most 10 MiB) "in case the user mounts the outer volume and creates new
///   files", rounded down to the sector size. (The Windows wizard, src/Format/Tcformat.c,
///   `DetermineMaxHiddenVolSize`, takes the same reserve from a live cluster bitmap instead.)
pub fn max_hidden_size(facts: &FatFacts, outer_size: u64) -> u64 {
    let mut room = outer_size.saturating_sub(facts.data_start);
    if room >= facts.cluster_size {
        room -= facts.cluster_size;
    }
    let core = room.saturating_sub(facts.scan_cluster.saturating_mul(facts.cluster_size));
    let reserve = (outer_size / 200).min(MAX_RESERVE);
    let max = core.min(outer_size).saturating_sub(reserve);
    max - max % facts.sector_size
}

/// Reads `len` bytes at `at` of `area` (short at its end: the rest stays zero).
fn read_at<D: Read + Seek>(area: &mut D, at: u64, buf: &mut [u8]) -> Result<(), VolumeError> {
    area.seek(SeekFrom::Start(at)).map_err(VolumeError::Read)?;
    let mut got = 0;
    while got < buf.len() {
        match area.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(VolumeError::Read(e)),
        }
    }
    Ok(())
}

/// The file system in a data area that is not FAT, by its signature: `Some(name)` for the
/// ones vcctl knows to name, `None` for anything else.
fn other_file_system<D: Read + Seek>(
    area: &mut D,
    boot: &[u8; 512],
    size: u64,
) -> Result<Option<&'static str>, VolumeError> {
    if &boot[3..11] == b"NTFS    " {
        return Ok(Some("NTFS"));
    }
    if &boot[3..11] == b"EXFAT   " {
        return Ok(Some("exFAT"));
    }
    if &boot[..4] == b"XFSB" {
        return Ok(Some("XFS"));
    }
    let mut b = [0u8; 8];
    if size >= 1024 + 64 {
        read_at(area, 1024 + 56, &mut b[..2])?;
        if b[..2] == [0x53, 0xEF] {
            return Ok(Some("ext2/ext3/ext4"));
        }
    }
    if size >= 65536 + 72 {
        read_at(area, 65536 + 64, &mut b)?;
        if &b == b"_BHRfS_M" {
            return Ok(Some("Btrfs"));
        }
    }
    Ok(None)
}

/// A FAT's layout, from its boot sector (offsets in bytes from the start of the data area).
struct Geometry {
    fat_type: u8,
    sector: u64,
    cluster_size: u64,
    fat_start: u64,
    fat_size: u64,
    fats: u64,
    data_start: u64,
    /// Data clusters (numbered from 2).
    clusters: u64,
}

impl Geometry {
    /// Byte offset in a FAT and length of entry `i`'s bytes.
    fn entry_bytes(&self, i: u64) -> (u64, u64) {
        match self.fat_type {
            12 => (i * 3 / 2, 2),
            16 => (i * 2, 2),
            _ => (i * 4, 4),
        }
    }

    /// Entry `i`'s value from `bytes`, which hold the FAT from byte `from`.
    fn entry(&self, bytes: &[u8], from: u64, i: u64) -> u32 {
        let (at, len) = self.entry_bytes(i);
        let b = &bytes[(at - from) as usize..(at - from + len) as usize];
        match self.fat_type {
            12 if i % 2 == 1 => u32::from(u16::from_le_bytes([b[0], b[1]]) >> 4),
            12 => u32::from(u16::from_le_bytes([b[0], b[1]]) & 0x0FFF),
            16 => u32::from(u16::from_le_bytes([b[0], b[1]])),
            _ => u32::from_le_bytes([b[0], b[1], b[2], b[3]]) & 0x0FFF_FFFF,
        }
    }

    /// Sets entry `i` in `bytes` (the FAT from byte `from`) to zero.
    fn clear(&self, bytes: &mut [u8], from: u64, i: u64) {
        let (at, len) = self.entry_bytes(i);
        let b = &mut bytes[(at - from) as usize..(at - from + len) as usize];
        match self.fat_type {
            12 if i % 2 == 1 => {
                b[0] &= 0x0F;
                b[1] = 0;
            }
            12 => {
                b[0] = 0;
                b[1] &= 0xF0;
            }
            _ => b.fill(0),
        }
    }

    /// Where in a FAT the entries of data clusters end (entries after it describe nothing).
    fn entries_end(&self) -> u64 {
        let (at, len) = self.entry_bytes(self.clusters + 1);
        (at + len).min(self.fat_size)
    }
}

/// Reads the boot sector: the type label (VeraCrypt's test: "FAT12"/"FAT16" at byte 54,
/// "FAT32" at byte 82) and the geometry. Any other file system is refused with a one-line
/// error naming it (or saying it is not recognised).
fn geometry<D: Read + Seek>(area: &mut D, size: u64, sector: u64) -> Result<Geometry, VolumeError> {
    let mut boot = [0u8; 512];
    read_at(area, 0, &mut boot)?;
    let fat_type = if &boot[54..59] == b"FAT12" {
        12
    } else if &boot[54..59] == b"FAT16" {
        16
    } else if &boot[82..87] == b"FAT32" {
        32
    } else {
        let what = match other_file_system(area, &boot, size)? {
            Some(name) => format!("holds {name}"),
            None if boot.iter().all(|b| *b == 0) => {
                "holds no file system (its first sector is zeros)".to_string()
            }
            None => "holds no file system vcctl recognises".to_string(),
        };
        return Err(VolumeError::BadLayout(format!(
            "the outer volume {what}; add-hidden reads only FAT12, FAT16 and FAT32 (create the \
             outer volume with --filesystem fat)"
        )));
    };
    let u16_at = |i: usize| u64::from(u16::from_le_bytes([boot[i], boot[i + 1]]));
    let u32_at = |i: usize| {
        u64::from(u32::from_le_bytes([
            boot[i],
            boot[i + 1],
            boot[i + 2],
            boot[i + 3],
        ]))
    };
    let damaged = |why: &str| {
        VolumeError::BadLayout(format!(
            "the outer volume's FAT{fat_type} boot sector is damaged ({why}); nothing was written"
        ))
    };
    let bytes_per_sector = u16_at(11);
    if bytes_per_sector != sector {
        return Err(damaged(&format!(
            "{bytes_per_sector} bytes per sector, the volume has {sector}"
        )));
    }
    let per_cluster = u64::from(boot[13]);
    if per_cluster == 0 || !per_cluster.is_power_of_two() {
        return Err(damaged(&format!("{per_cluster} sectors per cluster")));
    }
    let reserved = u16_at(14);
    let fats = u64::from(boot[16]);
    let fat_sectors = if fat_type == 32 {
        u32_at(36)
    } else {
        u16_at(22)
    };
    let root_bytes = if fat_type == 32 { 0 } else { u16_at(17) * 32 };
    let total = match u16_at(19) {
        0 => u32_at(32),
        n => n,
    } * sector;
    if reserved == 0 || fats == 0 || fat_sectors == 0 {
        return Err(damaged("no reserved sector, FAT or FAT sector"));
    }
    let fat_start = reserved * sector;
    let fat_size = fat_sectors * sector;
    let data_start = fat_start + fat_size * fats + root_bytes;
    if data_start >= total.min(size) {
        return Err(damaged(
            "its FATs and root directory end past the data area",
        ));
    }
    let cluster_size = per_cluster * sector;
    Ok(Geometry {
        fat_type,
        sector,
        cluster_size,
        fat_start,
        fat_size,
        fats,
        data_start,
        clusters: (total.min(size) - data_start) / cluster_size,
    })
}

/// Sets the FAT entries after the last data cluster's to zero in every FAT. The `fatfs` crate
/// marks them end-of-chain; VeraCrypt's formatter leaves them zero, and VeraCrypt's scan for
/// the last used cluster reads them, so with them set VeraCrypt would find no room for a
/// hidden volume in an outer volume vcctl created.
fn clear_entries_after_clusters<D: Read + Write + Seek>(
    area: &mut D,
    g: &Geometry,
) -> Result<(), VolumeError> {
    let first = g.clusters + 2;
    let (from, _) = g.entry_bytes(first);
    let from = from / g.sector * g.sector;
    if from >= g.fat_size {
        return Ok(());
    }
    let mut tail = vec![0u8; (g.fat_size - from) as usize];
    for fat in 0..g.fats {
        let at = g.fat_start + fat * g.fat_size + from;
        read_at(area, at, &mut tail)?;
        let mut i = first;
        while g.entry_bytes(i).0 + g.entry_bytes(i).1 <= g.fat_size {
            g.clear(&mut tail, from, i);
            i += 1;
        }
        area.seek(SeekFrom::Start(at))
            .and_then(|_| area.write_all(&tail))
            .map_err(VolumeError::Read)?;
    }
    Ok(())
}

/// Reads the FAT file system of a data area of `size` bytes with `sector`-byte sectors: the
/// boot sector (type label and geometry), then the FAT from the end of its data clusters' entries back to
/// its last non-zero 4-byte word, as VeraCrypt's scan does (VeraCrypt starts at the end of
/// the FAT; the entries after the data clusters' describe nothing, and VeraCrypt's own
/// formatter, like vcctl's, leaves them zero).
pub fn read_facts<D: Read + Seek>(
    area: &mut D,
    size: u64,
    sector: u64,
) -> Result<FatFacts, VolumeError> {
    let g = geometry(area, size, sector)?;
    let scan_end = g.entries_end().next_multiple_of(4).min(g.fat_size);
    let scan_word = last_nonzero_word(area, g.fat_start, scan_end)?.ok_or_else(|| {
        VolumeError::BadLayout(format!(
            "the outer volume's FAT{} is damaged (all zeros); nothing was written",
            g.fat_type
        ))
    })?;
    let scan_cluster = match g.fat_type {
        12 => scan_word * 8 / 12,
        16 => scan_word / 2,
        _ => scan_word / 4,
    };
    // The exact last entry in use: the highest non-zero data-cluster entry among those with a
    // byte in the last non-zero word (no later entry has a non-zero byte).
    let first = match g.fat_type {
        12 => (scan_word * 2 / 3).saturating_sub(1),
        16 => scan_word / 2,
        _ => scan_word / 4,
    };
    let mut bytes = [0u8; 16];
    let (from, _) = g.entry_bytes(first);
    read_at(area, g.fat_start + from, &mut bytes)?;
    let mut last_used_cluster = 1;
    for i in first.max(2)..first + 4 {
        let (at, len) = g.entry_bytes(i);
        if i >= g.clusters + 2 || at + len > g.fat_size {
            break;
        }
        if g.entry(&bytes, from, i) != 0 {
            last_used_cluster = i;
        }
    }
    Ok(FatFacts {
        fat_type: g.fat_type,
        sector_size: g.sector,
        cluster_size: g.cluster_size,
        fat_start: g.fat_start,
        fat_size: g.fat_size,
        data_start: g.data_start,
        last_used_cluster,
        scan_cluster,
    })
}

/// The byte offset in the FAT (at `fat_start`, its first `fat_size` bytes) of its last 4-byte
/// word that is not zero, reading back from the end in pieces of at most 1 MiB.
fn last_nonzero_word<D: Read + Seek>(
    area: &mut D,
    fat_start: u64,
    fat_size: u64,
) -> Result<Option<u64>, VolumeError> {
    const PIECE: u64 = 1 << 20;
    let mut end = fat_size - fat_size % 4;
    let mut buf = vec![0u8; PIECE.min(end) as usize];
    while end > 0 {
        let start = end.saturating_sub(PIECE);
        let piece = &mut buf[..(end - start) as usize];
        read_at(area, fat_start + start, piece)?;
        if let Some(w) = piece
            .chunks_exact(4)
            .rposition(|w| w.iter().any(|b| *b != 0))
        {
            return Ok(Some(start + 4 * w as u64));
        }
        end = start;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_systems_other_than_fat_are_named_and_nothing_is_guessed() {
        let refused = |image: Vec<u8>| {
            let size = image.len() as u64;
            match read_facts(&mut std::io::Cursor::new(image), size, 512) {
                Err(e) => e.to_string(),
                Ok(f) => panic!("read as {}", f.name()),
            }
        };
        let with = |at: usize, bytes: &[u8]| {
            let mut image = vec![0x5Au8; 1 << 17];
            image[at..at + bytes.len()].copy_from_slice(bytes);
            image
        };
        for (image, name) in [
            (with(3, b"NTFS    "), "holds NTFS"),
            (with(3, b"EXFAT   "), "holds exFAT"),
            (with(0, b"XFSB"), "holds XFS"),
            (with(1080, &[0x53, 0xEF]), "holds ext2/ext3/ext4"),
            (with(65536 + 64, b"_BHRfS_M"), "holds Btrfs"),
            (vec![0u8; 1 << 17], "its first sector is zeros"),
            (vec![0x5Au8; 1 << 17], "no file system vcctl recognises"),
            // A FAT label at the wrong place is not taken for one.
            (with(60, b"FAT16"), "no file system vcctl recognises"),
        ] {
            let err = refused(image);
            assert!(err.contains(name), "{name}: {err}");
            assert!(
                err.contains("add-hidden reads only FAT12, FAT16 and FAT32"),
                "{err}"
            );
        }
    }

    #[test]
    fn cluster_sizes_follow_veracrypts_table() {
        const MIB: u64 = 1 << 20;
        assert_eq!(veracrypt_cluster_size(300 << 10, 512), 512);
        assert_eq!(veracrypt_cluster_size(MIB, 512), 512);
        assert_eq!(veracrypt_cluster_size(MIB + 512, 512), 1024);
        assert_eq!(veracrypt_cluster_size(256 * MIB, 512), 2048);
        assert_eq!(veracrypt_cluster_size(512 * MIB, 512), 4096);
        assert_eq!(veracrypt_cluster_size(16 << 30, 512), 8192);
        assert_eq!(veracrypt_cluster_size(3 << 40, 512), 64 << 10);
        assert_eq!(veracrypt_cluster_size(3 << 40, 4096), 256 << 10);
    }
}
