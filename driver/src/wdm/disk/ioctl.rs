//! The device controls and PnP requests a volume device is sent: the glue half (W10).
//!
//! Owns: handing the METHOD_BUFFERED system buffer, its two lengths and the mounted volume's
//! facts to the portable `disk_ioctl::answer`, and a PnP request's minor code and usage
//! parameters to `disk_ioctl::pnp::answer`. Never: decides or lays out an answer (the portable
//! code does, table-tested in docs/disk-ioctls.tsv), takes the remove lock or completes the
//! IRP (`dispatch` does both).

use super::super::irp::Irp;
use super::device::MountedVolume;
use crate::disk_ioctl::{self, pnp, DiskFacts, Reply, Request};
use crate::Status;

/// Serves one device control; returns the status and the bytes of the reply.
///
/// IRQL: PASSIVE_LEVEL (IOCTL_DISK_VERIFY reads the host synchronously; device controls reach
/// a top-level device in the sender's thread at PASSIVE_LEVEL).
pub(super) fn disk_control(mounted: &MountedVolume, request: &mut Irp) -> (Status, usize) {
    let (code, input_len, output_len) = request.ioctl_parameters();
    let volume = &mounted.volume;
    // W2: the three MOUNTDEV answers come from the volume's one `VolumeNames`, so they agree.
    let suggested = mounted.names.suggested_link_name();
    let facts = DiskFacts {
        size: volume.size(),
        sector_size: mounted.sector_size,
        read_only: mounted.read_only,
        data_offset: volume.params.data_offset,
        volume_id: mounted.id,
        device_name: mounted.names.device_name(),
        unique_id: mounted.names.unique_id(),
        suggested_link: suggested.as_deref(),
    };
    let mut none = [0u8; 0];
    // Not METHOD_BUFFERED or no system buffer: the answer sees no bytes (no code it answers
    // with a reply is sent that way; unknown codes are refused whatever their buffers).
    let buffer = request.system_buffer().unwrap_or(&mut none);
    let Reply {
        status,
        information,
    } = disk_ioctl::answer(
        &facts,
        volume.host(),
        Request {
            code,
            input_len: input_len as usize,
            output_len: output_len as usize,
            buffer,
        },
    );
    (status, information)
}

/// The status an IRP_MJ_PNP request to a volume device completes with (information 0): a paging
/// file placed on the volume is refused, as by VeraCrypt; everything else is not supported.
pub(super) fn pnp_request(request: &Irp) -> Status {
    let (minor, usage) = request.pnp_parameters().unwrap_or((u8::MAX, None));
    let usage = usage.map(|(kind, in_path)| pnp::UsageNotification { kind, in_path });
    pnp::answer(minor, usage)
}
