//! The device controls and PnP requests a volume device is sent: the glue half (W10).
//!
//! Owns: handing the METHOD_BUFFERED system buffer, its two lengths and the mounted volume's
//! facts to the portable `disk_ioctl::answer`, and a PnP request's minor code and usage
//! parameters to `disk_ioctl::pnp::answer`. Never: decides or lays out an answer (the portable
//! code does, table-tested in docs/disk-ioctls.tsv), takes the remove lock or completes the
//! IRP (`dispatch` does both). The one answer decided here: IOCTL_DISK_VERIFY is refused with
//! STATUS_INVALID_DEVICE_STATE when the sender's thread cannot wait for a host read
//! ([`can_read_host`]).

use super::super::irp::Irp;
use super::device::MountedVolume;
use crate::disk_ioctl::{self, pnp, DiskFacts, Reply, Request};
use crate::Status;

/// STATUS_INVALID_DEVICE_STATE: IOCTL_DISK_VERIFY sent where its host read cannot complete.
const INVALID_DEVICE_STATE: Status = Status::Host(0xC000_0184);

/// True when the calling thread may wait for a synchronous host read (ZwReadFile on the
/// mount's handle): at PASSIVE_LEVEL with normal and special kernel APCs enabled, the I/O
/// manager's completion of the read (a special kernel APC to this thread) can be delivered.
///
/// KeAreAllApcsDisabled is TRUE at IRQL >= APC_LEVEL and inside a guarded region (wdm.h), so
/// FALSE means PASSIVE_LEVEL with special APCs enabled: the one call answers both questions.
/// KeGetCurrentIrql is not called: the x64 headers inline it as a read of CR8, which a driver
/// under Wine (user mode) cannot do, Wine's x64 ntoskrnl does not export it, and it would add
/// nothing to this answer.
///
/// IRQL: any (KeAreAllApcsDisabled may be called at any IRQL).
#[cfg(not(feature = "wine-host"))]
fn can_read_host() -> bool {
    // SAFETY: no preconditions; callable at any IRQL, reads only the current thread's state.
    unsafe { wdk_sys::ntddk::KeAreAllApcsDisabled() == 0 }
}

/// The wine-host build asks the virtual IRQL (W9) instead: Wine's KeAreAllApcsDisabled answers
/// TRUE in a driver's dispatch routine (seen in the Wine end to end), which would refuse every
/// VERIFY there, and Wine has no real IRQL. The virtual level is PASSIVE_LEVEL unless the glue
/// raised it (or the fault switch `VcdirectWineFaultVerifyAtApc` runs device-control dispatch
/// at APC_LEVEL, as the paging path can on Windows).
#[cfg(feature = "wine-host")]
fn can_read_host() -> bool {
    super::super::irql::at_passive()
}

/// Serves one device control; returns the status and the bytes of the reply.
///
/// IRQL: <= DISPATCH_LEVEL for every code but IOCTL_DISK_VERIFY, whose answer waits for a host
/// read: it is served only when [`can_read_host`] (PASSIVE_LEVEL, special APCs enabled) and
/// refused with STATUS_INVALID_DEVICE_STATE otherwise, so a filter that sends it at APC_LEVEL
/// or inside a guarded region gets an error, not a thread that waits forever.
pub(super) fn disk_control(mounted: &MountedVolume, request: &mut Irp) -> (Status, usize) {
    let (code, input_len, output_len) = request.ioctl_parameters();
    if code == disk_ioctl::code::DISK_VERIFY && !can_read_host() {
        return (INVALID_DEVICE_STATE, 0);
    }
    let volume = &mounted.volume;
    // W2: the three MOUNTDEV answers come from the volume's one `VolumeNames`, so they agree.
    let facts = DiskFacts {
        size: volume.size(),
        sector_size: mounted.sector_size,
        read_only: mounted.read_only,
        data_offset: volume.params.data_offset,
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
