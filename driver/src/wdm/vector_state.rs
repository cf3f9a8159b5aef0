//! The wide vector registers for the VAES path: saved before it runs and restored after.
//!
//! Owns: [`with_wide_vectors`], the one function that brackets the wide path with
//! KeSaveExtendedProcessorState / KeRestoreExtendedProcessorState (docs/review.md W13) and
//! makes the `WideVectors` token the path needs. `scripts/check-sys-image.py` allows VEX
//! instructions only in `vcdirect_aes_hw::wide::` and checks that every call path into it
//! passes through this function.
//! Never: decides whether a buffer is worth it (`KernelPlatform::wide_vectors` does), or fails
//! a request: a failed save (STATUS_INSUFFICIENT_RESOURCES when the kernel cannot get the save
//! area) means the XMM path runs (W6).
//!
//! x64 product image only: the Wine build leaves the path off (Wine 8.0's ntoskrnl has no
//! KeSaveExtendedProcessorState), and ARM64 has no wide path.

use core::mem::MaybeUninit;

use wdk_sys::ntddk::{
    KeRestoreExtendedProcessorState, KeSaveExtendedProcessorState, RtlGetEnabledExtendedFeatures,
};
use wdk_sys::XSTATE_SAVE;

use crate::crypto::WideVectors;

/// XSTATE_MASK_AVX (winnt.h: 1 << XSTATE_AVX, XSTATE_AVX = 2): the upper halves of YMM0-15.
const XSTATE_MASK_AVX: u64 = 1 << 2;
/// XSTATE_MASK_AVX512 (winnt.h): the opmask registers, the upper halves of ZMM0-15 (which VEX
/// instructions clear) and ZMM16-31. The kernel saves only what the CPU has enabled.
const XSTATE_MASK_AVX512: u64 = (1 << 5) | (1 << 6) | (1 << 7);

/// Runs `crypt` with the extended processor state saved and a token that lets it use the
/// wide registers; `None` when the save failed or the CPU lacks the wide path (then `crypt`
/// did not run). Never inlined: the image checker names it as the bracket.
///
/// IRQL: <= DISPATCH_LEVEL (KeSaveExtendedProcessorState's contract). The XSTATE_SAVE lives on
/// this stack and the state is restored before return, on the same thread, in LIFO order with
/// any other save the thread holds.
#[inline(never)]
pub(crate) fn with_wide_vectors<R>(crypt: impl FnOnce(&WideVectors) -> R) -> Option<R> {
    if !WideVectors::available() {
        return None;
    }
    // The mask may name only features the OS has enabled (else bugcheck 0x131): ask which of
    // the AVX and AVX-512 components it enabled; without the AVX state, no wide path.
    // SAFETY: no preconditions; callable at any IRQL.
    let mask = unsafe { RtlGetEnabledExtendedFeatures(XSTATE_MASK_AVX | XSTATE_MASK_AVX512) };
    if mask & XSTATE_MASK_AVX == 0 {
        return None;
    }
    let mut save = MaybeUninit::<XSTATE_SAVE>::zeroed();
    // SAFETY: `save` is a writable XSTATE_SAVE that outlives the bracket; `mask` names only
    // enabled features; IRQL as documented.
    let status = unsafe { KeSaveExtendedProcessorState(mask, save.as_mut_ptr()) };
    if status < 0 {
        return None;
    }
    // SAFETY: the save above succeeded on this thread and is restored below, after the token
    // (which cannot leave this thread: it is neither Send nor Sync) was dropped.
    let vectors = unsafe { WideVectors::assume_saved() };
    let result = vectors.map(|vectors| crypt(&vectors));
    // SAFETY: restores the save made above, on the same thread, after its last use.
    unsafe { KeRestoreExtendedProcessorState(save.as_mut_ptr()) };
    result
}
