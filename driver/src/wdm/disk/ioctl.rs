//! The device controls and PnP requests a volume device is sent: the glue half (W10).
//!
//! Owns: handing the METHOD_BUFFERED system buffer, its two lengths and the mounted volume's
//! facts to the portable `disk_ioctl::answer`, and a PnP request's minor code and usage
//! parameters to `disk_ioctl::pnp::answer`. Never: decides or lays out an answer (the portable
//! code does, table-tested in docs/disk-ioctls.tsv), takes the remove lock or completes the
//! IRP (`dispatch` does both), or reads the host: IOCTL_DISK_VERIFY is not answered here but
//! pended by `dispatch` and served by the engine on a path's thread (`Volume::dispatch`).

use super::super::irp::Irp;
use super::device::MountedVolume;
use crate::disk_ioctl::{self, pnp, DiskFacts, Reply, Request};
use crate::Status;

/// Serves one device control (never IOCTL_DISK_VERIFY: `dispatch` pends it for the engine);
/// returns the status and the bytes of the reply.
///
/// IRQL: <= DISPATCH_LEVEL: the answers only compute.
pub(super) fn disk_control(mounted: &MountedVolume, request: &mut Irp) -> (Status, usize) {
    let (code, input_len, output_len) = request.ioctl_parameters();
    let volume = &mounted.volume;
    // W2: the three MOUNTDEV answers come from the volume's one `VolumeNames`, so they agree.
    let facts = DiskFacts {
        size: volume.size(),
        sector_size: mounted.sector_size,
        read_only: mounted.read_only,
        volume_id: mounted.id,
        device_name: mounted.names.device_name(),
        unique_id: mounted.names.unique_id(),
        suggested_link: mounted.names.suggested_link_name(),
    };
    let mut none = [0u8; 0];
    // Not METHOD_BUFFERED, no system buffer, or one without IRP_BUFFERED_IO (a filter's
    // hand-built IRP; `Irp::system_buffer`): the answer sees no bytes and clips both lengths
    // to them, so nothing is read or written (no code it answers with a reply is sent that
    // way by the I/O manager; unknown codes are refused whatever their buffers).
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
/// file placed on the volume is refused, as by VeraCrypt, and every other usage notification
/// with STATUS_INVALID_DEVICE_REQUEST; any other minor code is not handled and keeps the
/// IoStatus.Status its sender set (`pnp::Answer::AsSent`).
pub(super) fn pnp_request(request: &Irp) -> Status {
    let (minor, usage) = request.pnp_parameters().unwrap_or((u8::MAX, None));
    let usage = usage.map(|(kind, in_path)| pnp::UsageNotification { kind, in_path });
    pnp::answer(minor, usage).status(request.current_status())
}
