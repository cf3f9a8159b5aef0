//! W14: the Windows structure layouts the glue relies on, asserted at compile time against the
//! ARM64 figures measured with Microsoft's WDK headers (`arm64-layouts.tsv` beside this file).
//!
//! Owns: the figures file (the measured table, pinned row by row by
//! `driver/tests/arm64_layouts.rs`; docs/arm64.md "Layout figures" says how it was measured)
//! and one assertion per figure the table holds for a structure the glue touches (size,
//! alignment, field offset).
//! Structures and offsets without a figure (the disk module below lists them) are not asserted.
//! Never: reads anything outside the repository at build time.
//!
//! Why it matters: on Linux the ARM64 bindings are generated from mingw-w64's DDK headers
//! configured as x64 (no DDK header set on Linux has an ARM64 branch; sys/README.md "ARM64",
//! docs/arm64.md).
//! Both targets are LLP64, so the layouts agree, and every assumption with a figure is checked
//! here: a wrong one fails the build, not a Windows machine. The assertions hold for the x64
//! image too (Microsoft's x64 and ARM64 layouts are identical for all of them).
//! Deliberately not asserted (and never to be used by the glue with x64-shaped bindings on
//! ARM64): GENERAL_LOOKASIDE / NPAGED_LOOKASIDE_LIST (aligned 128 on ARM64, 64 on x64),
//! XSTATE_SAVE (4 vs 56 bytes), CONTEXT, KPCR, KTRAP_FRAME. Sizes where mingw's headers differ
//! from Microsoft's (IRP alignment, DEVICE_OBJECT, DEVOBJ_EXTENSION, IO_COMPLETION_CONTEXT) are
//! asserted through their field offsets only: the glue never allocates those structures.

use core::mem::{align_of, offset_of, size_of};
use wdk_sys::*;

/// The measured figures: `name<TAB>bytes` lines, `#` comments.
const FIGURES: &str = include_str!("arm64-layouts.tsv");

/// The figure named `name`; a name missing from the table fails the build.
const fn figure(name: &str) -> usize {
    let t = FIGURES.as_bytes();
    let n = name.as_bytes();
    let mut line = 0;
    while line < t.len() {
        let mut j = 0;
        while j < n.len() && line + j < t.len() && t[line + j] == n[j] {
            j += 1;
        }
        if j == n.len() && line + j < t.len() && t[line + j] == b'\t' {
            let mut k = line + j + 1;
            let mut value = 0;
            let mut digits = 0;
            while k < t.len() && t[k].is_ascii_digit() {
                value = value * 10 + (t[k] - b'0') as usize;
                k += 1;
                digits += 1;
            }
            assert!(digits > 0, "arm64-layouts.tsv: a figure without a number");
            return value;
        }
        while line < t.len() && t[line] != b'\n' {
            line += 1;
        }
        line += 1;
    }
    panic!("arm64-layouts.tsv: a figure the glue asserts is missing")
}

/// Size and alignment of each type equal `size_<T>` and `align_<T>`.
macro_rules! size_align {
    ($($t:ident),* $(,)?) => {$(
        const _: () = assert!(
            size_of::<$t>() == figure(concat!("size_", stringify!($t))),
            concat!("W14: size of ", stringify!($t), " differs from the ARM64 figure")
        );
        const _: () = assert!(
            align_of::<$t>() == figure(concat!("align_", stringify!($t))),
            concat!("W14: alignment of ", stringify!($t), " differs from the ARM64 figure")
        );
    )*};
}

/// The offset of a (nested) field equals the named figure.
macro_rules! offset {
    ($figure:literal: $t:ident, $($field:tt).+) => {
        const _: () = assert!(
            offset_of!($t, $($field).+) == figure($figure),
            concat!("W14: ", $figure, " differs from the ARM64 figure")
        );
    };
}

size_align!(
    IO_STACK_LOCATION,
    DRIVER_OBJECT,
    FILE_OBJECT,
    MDL,
    KEVENT,
    KSEMAPHORE,
    KSPIN_LOCK,
    IO_REMOVE_LOCK,
    IO_STATUS_BLOCK,
    UNICODE_STRING,
    OBJECT_ATTRIBUTES,
    SECURITY_CLIENT_CONTEXT,
    SECURITY_QUALITY_OF_SERVICE,
    KEY_VALUE_PARTIAL_INFORMATION,
    LARGE_INTEGER,
    FILE_STANDARD_INFORMATION,
    KDPC,
    KDEVICE_QUEUE,
    KDEVICE_QUEUE_ENTRY,
    DISPATCHER_HEADER,
    LIST_ENTRY,
    KAPC,
    IO_REMOVE_LOCK_COMMON_BLOCK,
    WORK_QUEUE_ITEM,
    CLIENT_ID,
    GUID,
    KFLOATING_SAVE,
    FILE_END_OF_FILE_INFORMATION,
);
const _: () = assert!(size_of::<IRP>() == figure("size_IRP"), "W14: size of IRP");

offset!("off_IRP__MdlAddress": IRP, MdlAddress);
offset!("off_IRP__Flags": IRP, Flags);
offset!("off_IRP__AssociatedIrp": IRP, AssociatedIrp);
offset!("off_IRP__IoStatus": IRP, IoStatus);
offset!("off_IRP__RequestorMode": IRP, RequestorMode);
offset!("off_IRP__PendingReturned": IRP, PendingReturned);
offset!("off_IRP__Cancel": IRP, Cancel);
offset!("off_IRP__CancelIrql": IRP, CancelIrql);
offset!("off_IRP__CancelRoutine": IRP, CancelRoutine);
offset!("off_IRP__UserBuffer": IRP, UserBuffer);
offset!("off_IRP__UserEvent": IRP, UserEvent);
offset!("off_IRP__Overlay": IRP, Overlay);
offset!("off_IRP__CurrentLocation": IRP, CurrentLocation);
offset!("off_IRP__StackCount": IRP, StackCount);
offset!("off_IRP__Tail": IRP, Tail);
offset!("off_IRP__Tail_Overlay_CurrentStackLocation": IRP, Tail.Overlay.__bindgen_anon_2.__bindgen_anon_1.CurrentStackLocation);
offset!("off_IRP__Tail_Overlay_Thread": IRP, Tail.Overlay.Thread);
offset!("off_IRP__Tail_Overlay_DriverContext": IRP, Tail.Overlay.__bindgen_anon_1.__bindgen_anon_1.DriverContext);
offset!("off_IRP__Tail_Overlay_ListEntry": IRP, Tail.Overlay.__bindgen_anon_2.ListEntry);
offset!("off_IRP__Tail_Apc": IRP, Tail.Apc);
offset!("off_IRP__Tail_CompletionKey": IRP, Tail.CompletionKey);

offset!("off_IO_STACK_LOCATION__Parameters": IO_STACK_LOCATION, Parameters);
offset!("off_IO_STACK_LOCATION__Parameters_DeviceIoControl_IoControlCode": IO_STACK_LOCATION, Parameters.DeviceIoControl.IoControlCode);
offset!("off_IO_STACK_LOCATION__Parameters_DeviceIoControl_Type3InputBuffer": IO_STACK_LOCATION, Parameters.DeviceIoControl.Type3InputBuffer);
offset!("off_IO_STACK_LOCATION__Parameters_DeviceIoControl_OutputBufferLength": IO_STACK_LOCATION, Parameters.DeviceIoControl.OutputBufferLength);
offset!("off_IO_STACK_LOCATION__Parameters_DeviceIoControl_InputBufferLength": IO_STACK_LOCATION, Parameters.DeviceIoControl.InputBufferLength);
offset!("off_IO_STACK_LOCATION__Parameters_Read_ByteOffset": IO_STACK_LOCATION, Parameters.Read.ByteOffset);
offset!("off_IO_STACK_LOCATION__Parameters_Write_Length": IO_STACK_LOCATION, Parameters.Write.Length);
offset!("off_IO_STACK_LOCATION__Parameters_Others_Argument4": IO_STACK_LOCATION, Parameters.Others.Argument4);
offset!("off_IO_STACK_LOCATION__DeviceObject": IO_STACK_LOCATION, DeviceObject);
offset!("off_IO_STACK_LOCATION__FileObject": IO_STACK_LOCATION, FileObject);
offset!("off_IO_STACK_LOCATION__CompletionRoutine": IO_STACK_LOCATION, CompletionRoutine);
offset!("off_IO_STACK_LOCATION__Context": IO_STACK_LOCATION, Context);

offset!("off_DEVICE_OBJECT__DriverObject": DEVICE_OBJECT, DriverObject);
offset!("off_DEVICE_OBJECT__NextDevice": DEVICE_OBJECT, NextDevice);
offset!("off_DEVICE_OBJECT__AttachedDevice": DEVICE_OBJECT, AttachedDevice);
offset!("off_DEVICE_OBJECT__CurrentIrp": DEVICE_OBJECT, CurrentIrp);
offset!("off_DEVICE_OBJECT__Flags": DEVICE_OBJECT, Flags);
offset!("off_DEVICE_OBJECT__Characteristics": DEVICE_OBJECT, Characteristics);
offset!("off_DEVICE_OBJECT__Vpb": DEVICE_OBJECT, Vpb);
offset!("off_DEVICE_OBJECT__DeviceExtension": DEVICE_OBJECT, DeviceExtension);
offset!("off_DEVICE_OBJECT__DeviceType": DEVICE_OBJECT, DeviceType);
offset!("off_DEVICE_OBJECT__StackSize": DEVICE_OBJECT, StackSize);
offset!("off_DEVICE_OBJECT__AlignmentRequirement": DEVICE_OBJECT, AlignmentRequirement);
offset!("off_DEVICE_OBJECT__DeviceQueue": DEVICE_OBJECT, DeviceQueue);
offset!("off_DEVICE_OBJECT__Dpc": DEVICE_OBJECT, Dpc);
offset!("off_DEVICE_OBJECT__SectorSize": DEVICE_OBJECT, SectorSize);
offset!("off_DEVICE_OBJECT__DeviceLock": DEVICE_OBJECT, DeviceLock);
offset!("off_DEVICE_OBJECT__Spare1": DEVICE_OBJECT, Spare1);
offset!("off_DEVICE_OBJECT__DeviceObjectExtension": DEVICE_OBJECT, DeviceObjectExtension);

offset!("off_DRIVER_OBJECT__DeviceObject": DRIVER_OBJECT, DeviceObject);
offset!("off_DRIVER_OBJECT__DriverStart": DRIVER_OBJECT, DriverStart);
offset!("off_DRIVER_OBJECT__DriverSection": DRIVER_OBJECT, DriverSection);
offset!("off_DRIVER_OBJECT__DriverExtension": DRIVER_OBJECT, DriverExtension);
offset!("off_DRIVER_OBJECT__DriverName": DRIVER_OBJECT, DriverName);
offset!("off_DRIVER_OBJECT__HardwareDatabase": DRIVER_OBJECT, HardwareDatabase);
offset!("off_DRIVER_OBJECT__FastIoDispatch": DRIVER_OBJECT, FastIoDispatch);
offset!("off_DRIVER_OBJECT__DriverInit": DRIVER_OBJECT, DriverInit);
offset!("off_DRIVER_OBJECT__DriverStartIo": DRIVER_OBJECT, DriverStartIo);
offset!("off_DRIVER_OBJECT__DriverUnload": DRIVER_OBJECT, DriverUnload);
offset!("off_DRIVER_OBJECT__MajorFunction": DRIVER_OBJECT, MajorFunction);

offset!("off_MDL__Next": MDL, Next);
offset!("off_MDL__Size": MDL, Size);
offset!("off_MDL__MdlFlags": MDL, MdlFlags);
offset!("off_MDL__Process": MDL, Process);
offset!("off_MDL__MappedSystemVa": MDL, MappedSystemVa);
offset!("off_MDL__StartVa": MDL, StartVa);
offset!("off_MDL__ByteCount": MDL, ByteCount);
offset!("off_MDL__ByteOffset": MDL, ByteOffset);

offset!("off_FILE_OBJECT__DeviceObject": FILE_OBJECT, DeviceObject);
offset!("off_FILE_OBJECT__Vpb": FILE_OBJECT, Vpb);
offset!("off_FILE_OBJECT__FsContext": FILE_OBJECT, FsContext);
offset!("off_FILE_OBJECT__FileName": FILE_OBJECT, FileName);
offset!("off_FILE_OBJECT__CurrentByteOffset": FILE_OBJECT, CurrentByteOffset);
offset!("off_FILE_OBJECT__Flags": FILE_OBJECT, Flags);
offset!("off_FILE_OBJECT__Busy": FILE_OBJECT, Busy);
offset!("off_FILE_OBJECT__Lock": FILE_OBJECT, Lock);
offset!("off_FILE_OBJECT__Event": FILE_OBJECT, Event);
offset!("off_FILE_OBJECT__CompletionContext": FILE_OBJECT, CompletionContext);

offset!("off_KEVENT__Header": KEVENT, Header);
offset!("off_DISPATCHER_HEADER__SignalState": DISPATCHER_HEADER, SignalState);
offset!("off_DISPATCHER_HEADER__WaitListHead": DISPATCHER_HEADER, WaitListHead);
offset!("off_KSEMAPHORE__Limit": KSEMAPHORE, Limit);
offset!("off_IO_REMOVE_LOCK__Common": IO_REMOVE_LOCK, Common);
offset!("off_IO_REMOVE_LOCK_COMMON_BLOCK__Removed": IO_REMOVE_LOCK_COMMON_BLOCK, Removed);
offset!("off_IO_REMOVE_LOCK_COMMON_BLOCK__IoCount": IO_REMOVE_LOCK_COMMON_BLOCK, IoCount);
offset!("off_IO_REMOVE_LOCK_COMMON_BLOCK__RemoveEvent": IO_REMOVE_LOCK_COMMON_BLOCK, RemoveEvent);
offset!("off_OBJECT_ATTRIBUTES__ObjectName": OBJECT_ATTRIBUTES, ObjectName);
offset!("off_OBJECT_ATTRIBUTES__Attributes": OBJECT_ATTRIBUTES, Attributes);
offset!("off_OBJECT_ATTRIBUTES__SecurityDescriptor": OBJECT_ATTRIBUTES, SecurityDescriptor);
offset!("off_OBJECT_ATTRIBUTES__SecurityQualityOfService": OBJECT_ATTRIBUTES, SecurityQualityOfService);
offset!("off_SECURITY_CLIENT_CONTEXT__SecurityQos": SECURITY_CLIENT_CONTEXT, SecurityQos);
offset!("off_SECURITY_CLIENT_CONTEXT__ClientToken": SECURITY_CLIENT_CONTEXT, ClientToken);
offset!("off_SECURITY_CLIENT_CONTEXT__DirectlyAccessClientToken": SECURITY_CLIENT_CONTEXT, DirectlyAccessClientToken);
offset!("off_SECURITY_CLIENT_CONTEXT__DirectAccessEffectiveOnly": SECURITY_CLIENT_CONTEXT, DirectAccessEffectiveOnly);
offset!("off_SECURITY_CLIENT_CONTEXT__ServerIsRemote": SECURITY_CLIENT_CONTEXT, ServerIsRemote);
offset!("off_SECURITY_CLIENT_CONTEXT__ClientTokenControl": SECURITY_CLIENT_CONTEXT, ClientTokenControl);
offset!("off_SECURITY_QUALITY_OF_SERVICE__ContextTrackingMode": SECURITY_QUALITY_OF_SERVICE, ContextTrackingMode);

// The disk and storage structures the glue writes and reads as bytes, declared in `layout.rs`
// (the bindings lack these headers) and used through the offsets named there. Only those with
// figures in the table are asserted here: the sizes and alignments below and five offsets. No
// figures exist for VERIFY_INFORMATION, GET_DISK_ATTRIBUTES, MOUNTDEV_NAME,
// MOUNTDEV_SUGGESTED_LINK_NAME, PARTITION_INFORMATION_MBR/GPT or STORAGE_DESCRIPTOR_HEADER, nor
// for the other offsets `layout.rs` names: those are not checked against ARM64 figures.
mod disk {
    use super::super::layout::{
        DISK_GEOMETRY, DISK_GEOMETRY_EX, GET_LENGTH_INFORMATION, PARTITION_INFORMATION,
        PARTITION_INFORMATION_EX, STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR, STORAGE_ADAPTER_DESCRIPTOR,
        STORAGE_DEVICE_DESCRIPTOR, STORAGE_PROPERTY_QUERY,
    };
    use super::figure;
    use core::mem::{align_of, offset_of, size_of};

    size_align!(
        GET_LENGTH_INFORMATION,
        DISK_GEOMETRY,
        DISK_GEOMETRY_EX,
        PARTITION_INFORMATION,
        PARTITION_INFORMATION_EX,
        STORAGE_PROPERTY_QUERY,
        STORAGE_DEVICE_DESCRIPTOR,
        STORAGE_ADAPTER_DESCRIPTOR,
        STORAGE_ACCESS_ALIGNMENT_DESCRIPTOR,
    );
    offset!("off_DISK_GEOMETRY_EX__DiskSize": DISK_GEOMETRY_EX, DiskSize);
    offset!("off_PARTITION_INFORMATION_EX__PartitionLength": PARTITION_INFORMATION_EX, PartitionLength);
    offset!("off_PARTITION_INFORMATION_EX__Gpt": PARTITION_INFORMATION_EX, Style);
    offset!("off_STORAGE_DEVICE_DESCRIPTOR__RawPropertiesLength": STORAGE_DEVICE_DESCRIPTOR, RawPropertiesLength);
    offset!("off_STORAGE_ADAPTER_DESCRIPTOR__MaximumTransferLength": STORAGE_ADAPTER_DESCRIPTOR, MaximumTransferLength);
}
