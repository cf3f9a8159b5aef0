//! `__chkstk`, the stack probe LLVM calls before a function whose frame exceeds one page.
//!
//! The WDK's ntoskrnl.lib carries it; mingw-w64's libntoskrnl.a does not, so the image brings
//! its own. The engine's XTS batch (`crypto::xts`, a 4 KiB tweak array) has such a frame.
//! Contract (x64): RAX = frame size in bytes; touch every page from the caller's stack pointer
//! down to RSP - RAX, in order, so that a kernel stack overflow hits the guard page (a clean
//! bugcheck) instead of skipping over it; change no register but R10, R11 and flags; leave RSP
//! alone (the caller subtracts RAX itself).

#[cfg(target_arch = "x86_64")]
core::arch::global_asm!(
    ".globl __chkstk",
    "__chkstk:",
    // r10 = caller's RSP at the call (above our return address); r11 = lowest address.
    "    lea r10, [rsp + 8]",
    "    mov r11, r10",
    "    sub r11, rax",
    "    jae 2f",
    "    xor r11, r11",
    "2:",
    "    sub r10, 0x1000",
    "    cmp r10, r11",
    "    jb 3f",
    "    test byte ptr [r10], 0",
    "    jmp 2b",
    "3:",
    "    test byte ptr [r11], 0",
    "    ret",
);

// Contract (ARM64, as LLVM calls it for aarch64-pc-windows-msvc): x15 = frame size / 16; touch
// every 4 KiB page from SP down to SP - 16 * x15, in order, for the same guard-page reason; change
// no register but x16, x17 and the flags; leave SP alone (the caller subtracts the size itself).
// `ldr xzr, [..]` is a load whose value is dropped: it touches the page and writes no register.
// Never uses x18 (reserved by Windows on ARM64; check-sys.sh checks the image).
#[cfg(target_arch = "aarch64")]
core::arch::global_asm!(
    ".globl __chkstk",
    ".p2align 2",
    "__chkstk:",
    // x17 = caller's SP (a leaf call: SP is unchanged); x16 = lowest address, 0 on underflow.
    "    mov x17, sp",
    "    subs x16, x17, x15, lsl #4",
    "    csel x16, xzr, x16, lo",
    "2:",
    "    sub x17, x17, #0x1000",
    "    cmp x17, x16",
    "    b.lo 3f",
    "    ldr xzr, [x17]",
    "    b 2b",
    "3:",
    "    ldr xzr, [x16]",
    "    ret",
);
