//! Who sends a control IOCTL (docs/review.md W4), and the descriptors of our devices.
//!
//! Owns: reading the calling thread's token into a [`Caller`] (user SID from TokenUser,
//! administrator from SeTokenIsAdmin), and building and applying the device objects'
//! discretionary ACLs (control device: system, administrators, interactive users; volume
//! device: system, administrators, the mounting user).
//! Never: decides who may do what (`crate::access` does) or parses request buffers.
//!
//! wine-host build: Wine's token and object security routines are stubs or missing, so every
//! caller is the fixed identity [`wine_caller`] (an administrator) and no descriptor is
//! applied (sys/README.md lists the build differences).

use crate::access::Caller;
#[cfg(not(feature = "wine-host"))]
use crate::access::{ImpersonationLevel, Sid, Token};
use crate::Status;
use wdk_sys::DEVICE_OBJECT;

/// FILE_ALL_ACCESS.
#[cfg(not(feature = "wine-host"))]
const FILE_ALL_ACCESS: u32 = 0x001F_01FF;
/// FILE_GENERIC_READ | FILE_GENERIC_WRITE: open the control device and send every IOCTL.
#[cfg(not(feature = "wine-host"))]
const FILE_GENERIC_READ_WRITE: u32 = 0x0012_0089 | 0x0012_0116;
/// FILE_TRAVERSE | SYNCHRONIZE: Everyone may traverse the volume device into the file system
/// mounted on it (files are then governed by the file system), but not open it raw.
#[cfg(not(feature = "wine-host"))]
const TRAVERSE: u32 = 0x0000_0020 | 0x0010_0000;

/// Who the calling thread is: its effective token (the impersonation token if it impersonates,
/// else its process's primary token). An impersonation token below SecurityImpersonation
/// fails with STATUS_BAD_IMPERSONATION_LEVEL (`crate::access::Token::usable`).
///
/// IRQL: PASSIVE_LEVEL, in the caller's thread (a top-level driver's device control).
#[cfg(not(feature = "wine-host"))]
pub fn caller() -> Result<Caller, Status> {
    use wdk_sys::ntddk::{
        SeCaptureSubjectContext, SeLockSubjectContext, SeReleaseSubjectContext,
        SeUnlockSubjectContext,
    };
    // SAFETY: SECURITY_SUBJECT_CONTEXT is a plain C struct; zero is valid before capture.
    let mut context: wdk_sys::SECURITY_SUBJECT_CONTEXT = unsafe { core::mem::zeroed() };
    // SAFETY: `context` is valid for the call; capture takes token references that
    // SeReleaseSubjectContext drops.
    unsafe { SeCaptureSubjectContext(&mut context) };
    // SAFETY: a captured context; the lock keeps the tokens' contents stable while read.
    unsafe { SeLockSubjectContext(&mut context) };
    // SeQuerySubjectContextToken (a macro): the client token if any, else the primary one.
    // A client token below SecurityImpersonation is refused (`Token::usable`), never read.
    let (token, kind) = if context.ClientToken.is_null() {
        (context.PrimaryToken, Token::Primary)
    } else {
        let level = ImpersonationLevel::from_raw(context.ImpersonationLevel as i64);
        (context.ClientToken, Token::Impersonation(level))
    };
    let result = kind.usable().and_then(|()| token_caller(token));
    // SAFETY: locked above.
    unsafe { SeUnlockSubjectContext(&mut context) };
    // SAFETY: captured above; releases its token references.
    unsafe { SeReleaseSubjectContext(&mut context) };
    result
}

/// The user SID and administrator flag of a referenced token.
#[cfg(not(feature = "wine-host"))]
fn token_caller(token: wdk_sys::PACCESS_TOKEN) -> Result<Caller, Status> {
    use wdk_sys::ntddk::{ExFreePool, RtlLengthSid, RtlValidSid, SeQueryInformationToken};
    /// SID_AND_ATTRIBUTES, the whole of TOKEN_USER.
    #[repr(C)]
    struct TokenUser {
        sid: wdk_sys::PSID,
        attributes: u32,
    }
    if token.is_null() {
        return Err(crate::access::INVALID_SID);
    }
    let mut info: wdk_sys::PVOID = core::ptr::null_mut();
    // SAFETY: a token referenced by the captured subject context; TokenUser (1) allocates a
    // TOKEN_USER from paged pool into `info`, freed below.
    let status = unsafe {
        SeQueryInformationToken(
            token,
            wdk_sys::_TOKEN_INFORMATION_CLASS::TokenUser,
            &mut info,
        )
    };
    if status < 0 {
        return Err(Status::from_ntstatus(status as u32));
    }
    if info.is_null() {
        return Err(crate::access::INVALID_SID);
    }
    // SAFETY: on success `info` points to a TOKEN_USER whose SID lies in the same allocation.
    let sid_ptr = unsafe { (*info.cast::<TokenUser>()).sid };
    // SAFETY: RtlValidSid reads a SID header it checks first; RtlLengthSid then measures it.
    let sid = if !sid_ptr.is_null() && unsafe { RtlValidSid(sid_ptr) } != 0 {
        // SAFETY: a valid SID of RtlLengthSid bytes, alive until ExFreePool below.
        let len = unsafe { RtlLengthSid(sid_ptr) } as usize;
        // SAFETY: as above.
        Sid::from_bytes(unsafe { core::slice::from_raw_parts(sid_ptr.cast::<u8>(), len) })
    } else {
        Err(crate::access::INVALID_SID)
    };
    // SAFETY: the buffer SeQueryInformationToken allocated; freed once.
    unsafe { ExFreePool(info) };
    // SAFETY: a referenced token; SeTokenIsAdmin only reads its groups.
    let administrator = unsafe { wdk_sys::ntddk::SeTokenIsAdmin(token) } != 0;
    Ok(Caller::new(sid?, administrator))
}

/// wine-host build: Wine has one user and stubs for the token routines; every caller is this
/// administrator (S-1-5-21-0-0-0-1000, Wine's default user SID).
#[cfg(feature = "wine-host")]
pub fn wine_caller() -> Caller {
    Caller::new(crate::access::Sid::new(5, &[21, 0, 0, 0, 1000]), true)
}

/// wine-host build: see [`wine_caller`].
#[cfg(feature = "wine-host")]
pub fn caller() -> Result<Caller, Status> {
    Ok(wine_caller())
}

/// Which descriptor a device gets.
#[cfg_attr(feature = "wine-host", allow(dead_code))]
pub enum DeviceAccess<'a> {
    /// The control device: system and administrators all access, interactive users read and
    /// write (every IOCTL is then checked by `crate::access`).
    Control,
    /// A volume device: system, administrators and `owner` (the mounting user) all access;
    /// everyone else may only traverse it into the mounted file system.
    Volume {
        /// The mounting user.
        owner: &'a crate::access::Sid,
    },
}

/// Replaces the DACL of `device` with the one `access` names (RtlCreateSecurityDescriptor,
/// RtlCreateAcl, RtlAddAccessAllowedAce, RtlSetDaclSecurityDescriptor, then
/// ObSetSecurityObjectByPointer, which copies the descriptor into the object).
///
/// IRQL: PASSIVE_LEVEL.
///
/// # Safety
/// `device` is a device object of this driver, not yet deleted.
#[cfg(not(feature = "wine-host"))]
pub unsafe fn protect(device: *mut DEVICE_OBJECT, access: DeviceAccess<'_>) -> Result<(), Status> {
    use alloc::vec::Vec;
    use wdk_sys::ntddk::{
        RtlAddAccessAllowedAce, RtlCreateAcl, RtlCreateSecurityDescriptor,
        RtlSetDaclSecurityDescriptor,
    };
    extern "system" {
        /// Exported by ntoskrnl (ntifs.h); mingw's ddk headers do not declare it.
        fn ObSetSecurityObjectByPointer(
            object: wdk_sys::PVOID,
            information: u32,
            descriptor: wdk_sys::PSECURITY_DESCRIPTOR,
        ) -> wdk_sys::NTSTATUS;
    }
    const SECURITY_DESCRIPTOR_REVISION: u32 = 1;
    const ACL_REVISION: u32 = 2;
    const DACL_SECURITY_INFORMATION: u32 = 4;
    let check = |status: wdk_sys::NTSTATUS| {
        if status < 0 {
            Err(Status::from_ntstatus(status as u32))
        } else {
            Ok(())
        }
    };

    // W6: the ACEs' SIDs are inline values (`Sid` allocates nothing); the ACL's storage is
    // the one allocation here, fallible.
    let (third, fourth) = match access {
        // S-1-5-4, INTERACTIVE.
        DeviceAccess::Control => ((Sid::new(5, &[4]), FILE_GENERIC_READ_WRITE), None),
        DeviceAccess::Volume { owner } => (
            (owner.clone(), FILE_ALL_ACCESS),
            // S-1-1-0, Everyone.
            Some((Sid::new(1, &[0]), TRAVERSE)),
        ),
    };
    let aces = [
        Some((Sid::local_system(), FILE_ALL_ACCESS)),
        Some((Sid::administrators(), FILE_ALL_ACCESS)),
        Some(third),
        fourth,
    ];
    // ACL header (8) + per ACE: ACE header (4) + mask (4) + the SID (at most 68 bytes each,
    // so no overflow).
    let acl_len: usize = 8 + aces
        .iter()
        .flatten()
        .map(|(s, _)| 8 + s.as_bytes().len())
        .sum::<usize>();
    // u64 storage: the ACL must be 4-byte aligned.
    let mut acl_buf: Vec<u64> = crate::io::try_vec(acl_len.div_ceil(8))?;
    acl_buf.resize(acl_len.div_ceil(8), 0);
    let acl: wdk_sys::PACL = acl_buf.as_mut_ptr().cast();
    // SAFETY: `acl` has `acl_len` writable, aligned bytes.
    check(unsafe { RtlCreateAcl(acl, acl_len as u32, ACL_REVISION) })?;
    for (sid, mask) in aces.iter().flatten() {
        // A writable copy for the PSID parameter (on the stack: no allocation).
        let mut bytes = [0u8; crate::access::MAX_SID_LENGTH];
        let len = sid.as_bytes().len();
        bytes[..len].copy_from_slice(sid.as_bytes());
        // SAFETY: an ACL with room for this ACE (sized above); `bytes` holds a valid SID that
        // RtlAddAccessAllowedAce reads and copies.
        check(unsafe {
            RtlAddAccessAllowedAce(acl, ACL_REVISION, *mask, bytes.as_mut_ptr().cast())
        })?;
    }
    // SAFETY: SECURITY_DESCRIPTOR is a plain C struct; zero is valid before creation.
    let mut sd: wdk_sys::SECURITY_DESCRIPTOR = unsafe { core::mem::zeroed() };
    let sd_ptr: wdk_sys::PSECURITY_DESCRIPTOR =
        (&mut sd as *mut wdk_sys::SECURITY_DESCRIPTOR).cast();
    // SAFETY: `sd` is an absolute descriptor's storage, valid for the calls; the DACL it
    // points to (`acl_buf`) outlives them.
    check(unsafe { RtlCreateSecurityDescriptor(sd_ptr, SECURITY_DESCRIPTOR_REVISION) })?;
    // SAFETY: as above.
    check(unsafe { RtlSetDaclSecurityDescriptor(sd_ptr, 1, acl, 0) })?;
    // SAFETY: `device` is our live device object (contract); the object manager copies the
    // descriptor before returning.
    check(unsafe { ObSetSecurityObjectByPointer(device.cast(), DACL_SECURITY_INFORMATION, sd_ptr) })
}

/// wine-host build: Wine's object security is a stub; the default descriptor stays.
///
/// # Safety
/// `device` is a device object of this driver, not yet deleted.
#[cfg(feature = "wine-host")]
pub unsafe fn protect(
    _device: *mut DEVICE_OBJECT,
    _access: DeviceAccess<'_>,
) -> Result<(), Status> {
    Ok(())
}
