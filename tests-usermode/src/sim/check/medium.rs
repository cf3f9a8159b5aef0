//! After the run, every sector of the medium holds a write the replayed log allows there
//! (the last successful one, or any failed one that may have reached it).

use vcdirect::crypto::XtsCipher;

use crate::sim::log::{decode_sector, LogEntry, OpKind, DATA_OFFSET, DATA_SECTORS, SECTOR};

pub(crate) fn check_medium(
    log: &[LogEntry],
    medium: &[u8],
    cipher: &XtsCipher,
    violations: &mut Vec<String>,
) {
    // Final allowed set per sector: the replayed model after every request.
    let mut model: Vec<Vec<u32>> = vec![vec![0]; DATA_SECTORS as usize];
    for e in log {
        let (Some(o), OpKind::Write, None) = (&e.outcome, e.kind, e.expected) else {
            continue;
        };
        let range = e.first_sector as usize..(e.first_sector + e.sectors) as usize;
        if o.status.is_success() {
            for s in range {
                model[s] = vec![e.id];
            }
        } else if !e.wrote_nothing(o) {
            for s in range {
                model[s].push(e.id);
            }
        }
    }
    let mut data =
        medium[DATA_OFFSET as usize..(DATA_OFFSET + DATA_SECTORS * SECTOR) as usize].to_vec();
    cipher.decrypt(&mut data, DATA_OFFSET / SECTOR);
    for s in 0..DATA_SECTORS as usize {
        let sec = &data[s * SECTOR as usize..(s + 1) * SECTOR as usize];
        match decode_sector(sec, s as u64) {
            Some(id) if model[s].contains(&id) => {}
            other => {
                violations.push(format!(
                    "medium sector {s}: holds {other:?}, model allows {:?}",
                    model[s]
                ));
                return;
            }
        }
    }
}
