//! docs/review.md W11: what a mount's host path names. A device object is a raw device (the
//! direct path may serve it); a file below a device or behind a drive letter is a container
//! file (always the legacy path), as VeraCrypt treats it. A link in the DOS device namespace to a
//! device (`\??\X:`, `\??\PhysicalDriveN`, `\??\Volume{GUID}`, `\GLOBAL??\...`) is a device.

use vcdirect::platform::HostKind;

fn kind(path: &str) -> HostKind {
    HostKind::of_path(&path.encode_utf16().collect::<Vec<u16>>())
}

#[test]
fn w11_device_objects_are_raw_devices() {
    for path in [
        r"\Device\HarddiskVolume3",
        r"\device\harddiskvolume12",
        r"\Device\Harddisk0\Partition1",
        r"\DEVICE\HARDDISK10\PARTITION2",
        r"\Device\Harddisk1\DR1",
        r"\Device\CdRom0",
        // Links to devices in the DOS device namespace.
        r"\??\Volume{3f2504e0-4f89-11d3-9a0c-0305e82c3301}",
        r"\GLOBAL??\volume{3f2504e0-4f89-11d3-9a0c-0305e82c3301}",
        r"\??\PhysicalDrive0",
        r"\??\physicaldrive12",
        r"\??\X:",
        r"\??\c:",
        r"\GLOBAL??\X:",
        r"\DosDevices\X:",
        r"\GLOBAL??\PhysicalDrive3",
        r"\??\Harddisk0Partition1",
        r"\??\GLOBALROOT\Device\HarddiskVolume3",
        r"\GLOBAL??\GLOBALROOT\Device\Harddisk0\Partition1",
    ] {
        assert_eq!(kind(path), HostKind::RawDevice, "{path}");
    }
}

#[test]
fn w11_a_file_below_a_device_is_a_container_file() {
    for path in [
        r"\Device\HarddiskVolume3\vol.hc",
        r"\Device\HarddiskVolume3\dir\sub\vol.hc",
        r"\Device\HarddiskVolume3\",
        r"\Device\Harddisk0\Partition1\vol.hc",
        r"\Device\Harddisk0\vol.hc",
        r"\Device\HarddiskVolume3\Partition1",
        r"\Device\Mup\server\share\vol.hc",
        r"\??\C:\vol.hc",
        r"\??\UNC\server\share\vol.hc",
        r"\DosDevices\C:\vol.hc",
        r"\??\C:\",
        r"\GLOBAL??\C:\dir\vol.hc",
        r"\??\Volume{3f2504e0-4f89-11d3-9a0c-0305e82c3301}\vol.hc",
        r"\??\Volume{3f2504e0-4f89-11d3-9a0c-0305e82c3301}\",
        r"\??\Volume{",
        r"\??\PhysicalDrive",
        r"\??\PhysicalDrive0\x",
        r"\??\CC:",
        r"\??\1:",
        r"\??\",
        r"\??",
        r"\??\GLOBALROOT\Device\HarddiskVolume3\vol.hc",
        r"\??\GLOBALROOT",
        r"\??\Harddisk0Partition",
        r"\??\Harddisk0Partition1\vol.hc",
        r"\Global\X:",
        r"\Device\",
        r"\Device",
        r"Device\HarddiskVolume3",
        "",
    ] {
        assert_eq!(kind(path), HostKind::FileContainer, "{path}");
    }
}

#[test]
fn w11_non_ascii_never_matches_the_device_prefix() {
    // U+0100 is not 'D' with a high byte dropped: a byte-truncating compare would call this a
    // device.
    let mut path: Vec<u16> = r"\Device\HarddiskVolume3".encode_utf16().collect();
    path[1] = 0x0144; // low byte 0x44 = 'D'
    assert_eq!(HostKind::of_path(&path), HostKind::FileContainer);
}
