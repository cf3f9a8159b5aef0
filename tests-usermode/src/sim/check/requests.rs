//! Every request completes once, with the status its shape and the seed's faults allow (a
//! malformed one with its precise error, one cancelled while queued with STATUS_CANCELLED and
//! nothing transferred, a successful write with all its bytes), and every successful read
//! returns, per sector, a write the ordering rules allow (the log replayed in dispatch order).
//! A request whose buffer cannot be mapped fails with STATUS_INSUFFICIENT_RESOURCES (W7; the
//! medium check then shows none of its sectors was written).

use vcdirect::Status;

use crate::sim::log::{decode_sector, LogEntry, OpKind, DATA_SECTORS, SECTOR};

pub(crate) fn check_log(log: &[LogEntry], allowed: &[Status], violations: &mut Vec<String>) {
    let mut model: Vec<Vec<u32>> = vec![vec![0]; DATA_SECTORS as usize];
    for (i, e) in log.iter().enumerate() {
        let Some(o) = &e.outcome else {
            violations.push(format!("request {i} ({:?}) never completed", e.kind));
            continue;
        };
        if let Some(exp) = e.expected {
            if o.status != exp {
                violations.push(format!(
                    "malformed request {i} got {:?}, expected {exp:?}",
                    o.status
                ));
            }
            continue;
        }
        // W7: a buffer that cannot be mapped fails its request (STATUS_INSUFFICIENT_RESOURCES,
        // or an earlier refusal), and only such a buffer fails a request that way.
        let unmapped_ok = [
            Status::InsufficientResources,
            Status::Cancelled,
            Status::DeviceNotReady,
        ];
        if e.unmappable && (!unmapped_ok.contains(&o.status) || o.information != 0) {
            violations.push(format!(
                "W7: request {i} ({:?}) with an unmappable buffer ended {:?} with {} bytes",
                e.kind, o.status, o.information
            ));
        }
        if !e.unmappable && o.status == Status::InsufficientResources {
            violations.push(format!(
                "W7: request {i} ({:?}) with a mappable buffer failed with {:?}",
                e.kind, o.status
            ));
        }
        if !o.status.is_success() && !allowed.contains(&o.status) {
            violations.push(format!(
                "request {i} ({:?}) failed with {:?}",
                e.kind, o.status
            ));
        }
        if e.routine_ran && (o.status, o.information) != (Status::Cancelled, 0) {
            violations.push(format!(
                "request {i} ({:?}) was cancelled while queued but ended {:?} with {} bytes",
                e.kind, o.status, o.information
            ));
        }
        let range = e.first_sector as usize..(e.first_sector + e.sectors) as usize;
        match e.kind {
            OpKind::Flush => {}
            OpKind::Write => {
                if o.status.is_success() {
                    if o.information != (e.sectors * SECTOR) as usize {
                        violations.push(format!("write {i} reported {} bytes", o.information));
                    }
                    for s in range {
                        model[s] = vec![e.id];
                    }
                } else if !e.wrote_nothing(o) {
                    for s in range {
                        if !model[s].contains(&e.id) {
                            model[s].push(e.id);
                        }
                    }
                }
            }
            OpKind::Read => {
                if !o.status.is_success() {
                    continue;
                }
                let Some(data) = &o.data else {
                    violations.push(format!("read {i} succeeded without its buffer"));
                    continue;
                };
                for (k, s) in range.enumerate() {
                    let sec = &data[k * SECTOR as usize..(k + 1) * SECTOR as usize];
                    match decode_sector(sec, s as u64) {
                        Some(id) if model[s].contains(&id) => {}
                        Some(id) => {
                            violations.push(format!(
                                "read {i} sector {s}: saw write {id}, model allows {:?}",
                                model[s]
                            ));
                            break;
                        }
                        None => {
                            violations.push(format!("read {i} sector {s}: corrupt data"));
                            break;
                        }
                    }
                }
            }
        }
    }
}
