//! WM_DEVICECHANGE after a drive letter appears or disappears (W2), as VeraCrypt's tools send
//! it: a DEV_BROADCAST_VOLUME with the letter's unit mask, to every top-level window, with a
//! short timeout per window so a hung program cannot stall vcctl. Explorer updates its drive
//! list from it.
#![allow(unsafe_code)]

use windows_sys::Win32::UI::WindowsAndMessaging::{
    SendMessageTimeoutW, DBT_DEVICEARRIVAL, DBT_DEVICEREMOVECOMPLETE, DBT_DEVTYP_VOLUME,
    DEV_BROADCAST_VOLUME, HWND_BROADCAST, SMTO_ABORTIFHUNG, WM_DEVICECHANGE,
};

/// Milliseconds each window may take to answer.
const TIMEOUT_MS: u32 = 200;

fn broadcast(event: u32, letter: char) {
    let Some(mask) = super::unit_mask(letter) else {
        return;
    };
    let volume = DEV_BROADCAST_VOLUME {
        dbcv_size: core::mem::size_of::<DEV_BROADCAST_VOLUME>() as u32,
        dbcv_devicetype: DBT_DEVTYP_VOLUME,
        dbcv_reserved: 0,
        dbcv_unitmask: mask,
        dbcv_flags: 0,
    };
    let mut result: usize = 0;
    // SAFETY: `volume` and `result` outlive the call, which is synchronous (each window's
    // answer, or its timeout, comes before it returns); the receivers only read the structure.
    unsafe {
        SendMessageTimeoutW(
            HWND_BROADCAST,
            WM_DEVICECHANGE,
            event as usize,
            &volume as *const DEV_BROADCAST_VOLUME as isize,
            SMTO_ABORTIFHUNG,
            TIMEOUT_MS,
            &mut result,
        )
    };
}

/// Drive `letter` appeared (DBT_DEVICEARRIVAL).
pub fn arrived(letter: char) {
    broadcast(DBT_DEVICEARRIVAL, letter);
}

/// Drive `letter` is gone (DBT_DEVICEREMOVECOMPLETE).
pub fn removed(letter: char) {
    broadcast(DBT_DEVICEREMOVECOMPLETE, letter);
}
