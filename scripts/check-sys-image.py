#!/usr/bin/env python3
"""W13 checks on one built driver image (called by scripts/check-sys.sh for each flavour).

Reads the image with llvm-readobj/llvm-objdump (Debian llvm) and the linker map, and prints one
line per check ("  ok   ..." / "  FAIL ...: why") with its figure. Exit status: the number of
failed checks (0 = all passed).

  check-sys-image.py FLAVOUR IMAGE MAP ALLOWLIST

Checks: no section both writable and executable; DllCharacteristics NX_COMPAT, DYNAMIC_BASE and
FORCE_INTEGRITY; .reloc and .pdata present and non-empty; every import listed in ALLOWLIST
(lines "Name<TAB>reason", sorted by name, every line with a reason); on x64 VEX/EVEX/XOP
encoded instructions only in the VAES path's functions and every call path into them through
the processor-state save (WIDE_FUNCS, WIDE_BRACKET), and no x87/MMX instruction; a stack budget for the dispatch, control,
worker and cancel paths (x64 and ARM64).

Stack budget. Frame per function: on x64 from the image's own unwind data (.pdata/.xdata: the
pushes and the stack allocation of the prologue, plus the return address), on ARM64 from the
code (below); functions named by the linker map. A call graph from the disassembly: direct
calls, and jumps out of a function (tail calls) which run in the caller's place. Calls through
the import address table are kernel routines: their own stack is not counted (the kernel's share
of the kernel stack). Indirect calls (trait objects, function pointers) may reach any function
whose address the image takes (a RIP-relative `lea`, an `adrp`+`add` pair, or a pointer stored
in a data section, such as a vtable): the worst such function is taken at every indirect call
site. A call through a vtable slot (`call *24(%reg)`, or a register loaded from `24(%reg)`; `ldr
xN, [xM, #24]` then `blr xN` on ARM64) may reach only the functions stored at that offset of the
image's vtables. Routines only the kernel calls (dispatch, cancel, completion, thread and
work-item starts) are never targets of the driver's own indirect calls; the pool allocator's
indirect call is ExAllocatePool2.

On ARM64 the unwind data need not record the stack a function allocates after it sets its frame
pointer (the unwinder restores SP from FP), so there each frame is taken from the code: the sum
of the prologue's SP decrements (`stp/str ..., [sp, #-N]!`, `sub sp, sp, #N`, and the __chkstk
form `mov x15, #N; bl __chkstk; sub sp, sp, x15, lsl #4` = 16*N bytes). On both architectures a
"frames agree with the code" check fails if the code moves SP in a way the frame does not count.

Recursion: a call to a function already on the path fails the budget of that path, unless the
function is in RECURSION with a depth bound and its reason; then the cycle's frames are counted
depth times. The result is an upper bound for the code the image holds, not a measurement.
"""

import bisect
import os
import re
import subprocess
import sys

# Limits of the stack budget, in bytes. The x64 kernel stack is 24 KiB: KERNEL_STACK_SIZE
# (0x6000) in the WDK's ntddk.h (AMD64 section). For ARM64 the same 24 KiB is assumed but not
# verified here (ntddk.h's ARM64 section was not checked). A storage driver runs below a
# filesystem and above the disk stack on the same stack, so its share is kept small. A figure
# over its limit fails the check.
# The dispatch path includes a small direct read issued on the dispatching thread and, when
# the host completed it before its start returned, its decryption there (docs/design.md §5;
# the margin the thread must have left, host stack included, is DISPATCH_STACK_NEEDED in
# driver/src/direct/detached.rs). The completion path is a detached read's completion
# routine (IRQL <= DISPATCH_LEVEL, on the DPC stack or whichever thread completes the child),
# which decrypts a read and finishes the request (the DPC stack, or below the completing
# driver's frames; the figure counts the crypto closure through the vtable shims the call
# graph over-approximates).
BUDGETS = {"dispatch": 6144, "control": 12288, "worker": 8192, "cancel": 3072,
           "completion": 7168}

# W5: the function that keys the portable AES path by value, and the one that burns the stack
# after it (driver/src/crypto/xts.rs). The burn's frame must exceed the keying's deepest path by
# the margin: 1 KiB for what an interrupt or a context switch at the keying's deepest point
# stores below it (a 0x190-byte KTRAP_FRAME with the volatile registers, the ISR's pushes, the
# switch frame), which also covers the burn frame's own return address, pushes and home space,
# which its zeroed array does not fill (tests-usermode's w5_portable_keying checks in user mode
# that the keying writes nothing below the zeroed array).
BURN_COVERS = ("vcdirect::crypto::xts::key_into", "vcdirect::crypto::xts::burn_stack")
# W5: the system threads' start routine, and the burn it ends with (same margin).
THREAD_BURN = ("vcdirect::wdm::thread::thread_start", "vcdirect::crypto::xts::burn_thread_stack")
BURN_MARGIN = int(os.environ.get("CHECK_SYS_BURN_MARGIN", "1024"))

# Roots of each path: symbol-name patterns (demangled paths) matched against the map.
ROOTS = {
    # The disk devices' MajorFunction handler: reads and writes arrive here below a filesystem,
    # possibly on a thread whose stack the filesystem and the cache manager already use.
    "dispatch": [r"^vcdirect::wdm::disk::(dispatch::)?dispatch$"],
    # The control device's handlers (mount, dismount, status from vcctl): called at the top of
    # a user thread's kernel stack, so a larger share is left to them.
    "control": [r"^vcdirect::wdm::control::dispatch_", r"^vcdirect::wdm::control::driver_unload"],
    # The start routine of every system thread (legacy I/O and completion threads, direct
    # workers) and of the work items.
    "worker": [r"^vcdirect::wdm::thread::thread_start$", r"^vcdirect::wdm::work_item::run_"],
    # The cancel routine of queued requests.
    "cancel": [r"^vcdirect::wdm::disk::(dispatch::)?cancel_queued$"],
    # The completion routine of a read the dispatching thread issued.
    "completion": [r"^vcdirect::wdm::host::(child_irp::)?detached_done$"],
}

# Routines only the kernel calls (dispatch, cancel and completion routines, thread and work-item
# starts, unload, DriverEntry): their addresses are taken to be handed to the kernel, and no
# indirect call in the driver reaches them, so they are not indirect-call targets.
KERNEL_CALLBACKS = [r"^DriverEntry$", r"^vcdirect::wdm::disk::(dispatch::)?dispatch$",
                    r"^vcdirect::wdm::disk::(dispatch::)?cancel_queued$",
                    r"^vcdirect::wdm::control::(dispatch_|driver_unload)",
                    r"^vcdirect::wdm::thread::thread_start$", r"^vcdirect::wdm::work_item::run_",
                    r"^vcdirect::wdm::host::(child_irp::)?(child_done|detached_done)$"]

# Recursive functions allowed on a budgeted path: name pattern -> (depth bound, reason). The
# cycle through the function is counted `depth` times.
# (The range lock's treap, barrier/interval.rs, was the one deep recursion found on the dispatch
# and cancel paths: its height can reach its 256 nodes, 257 frames, more than the whole stack.
# Its walks are iterative now, so it needs no entry here.)
# core::fmt::write: the Display impls in these cycles (registry/) nest at most 4 write calls (a
# caller's write > registry::config::Note > parse::Malformed (also reached from OffReason) >
# TypeName); the cycle is wider in the call graph, which takes every address-taken fmt function
# at each indirect call.
FMT = "Display impls nest at most 4 write calls (registry: Note > Malformed > TypeName)"
# Drops and boxed closures: not proven by this script. Dropping a value runs the drops of the
# types it holds, and the driver's closures, Arcs and boxed FnOnce do not hold their own type;
# the cycle comes from the call graph taking every vtable's drop_in_place / call_once entry at
# each slot call. One repeat is counted.
DROP = "drop/call_once cycle of the call graph's vtable-slot over-approximation; 1 repeat"
RECURSION = {
    r"^core::fmt::(write|Write::write_fmt)$": (4, FMT),
    r"^<vcdirect::registry::[A-Za-z_:]+ as core::fmt::Display>::fmt$": (4, FMT),
    r"^alloc::sync::Arc<T,A>::drop_slow$": (2, DROP),
    r"^core::ptr::drop_in_place<": (2, DROP),
    r"^core::ops::function::FnOnce::call_once\{\{vtable\.shim\}\}$": (2, DROP),
    # The dismount thread's body (a boxed FnOnce) calls it; it calls no boxed closure itself
    # except through the slot calls the graph over-approximates (W1, wdm/control.rs).
    r"^vcdirect::wdm::control::dismount_volume$": (2, DROP),
}

# Functions whose indirect calls go to kernel routines looked up at run time with
# MmGetSystemRoutineAddress (wdm/pool.rs: ExAllocatePool2), not into the driver.
# Only `pool::allocate` (never inlined for this purpose) calls through that pointer; every other
# indirect call in the pool module (a boxed closure's drop on a failure path) is counted.
KERNEL_INDIRECT = [r"^vcdirect::wdm::pool::allocate$"]

# Functions whose only indirect call is the engine's `Platform::run_pieces` work, a `&dyn
# Fn(&mut Piece)` (wdm/encryption_pool.rs, the platform's run_pieces): through its `call` slot
# it reaches a closure's (or a closure shim's) entry, never another trait's method stored at
# the same vtable offset (`fmt::Write::write_fmt` shares that offset with `Fn::call`).
CLOSURE_ONLY = [r"^vcdirect::wdm::encryption_pool::",
                r"^<vcdirect::wdm::platform::KernelPlatform as vcdirect::platform::Platform>::run_pieces$"]
CLOSURE_NAME = r"\{\{closure\}\}|\{\{vtable\.shim\}\}|^core::ops::function::"

# Functions whose only indirect call is the allocation-failure injection a platform installed
# (driver/src/platform/injection.rs, Wine build only): through that slot it reaches an
# `AllocationInjection::fails`, never another trait's method stored at the same offset.
INJECTION_ONLY = {r"^vcdirect::platform::injection::installed_says_fail$":
                  r" as vcdirect::platform::injection::AllocationInjection>::fails$"}

failures = 0
# VEX/EVEX-encoded instructions of an x64 image: (address, mnemonic).
VEX = []
# W13: the only functions with VEX/EVEX instructions (the VAES path, aes-hw/src/wide.rs), and
# the one function that brackets them with KeSaveExtendedProcessorState and
# KeRestoreExtendedProcessorState (driver/src/wdm/vector_state.rs): every call path into the
# former passes through the latter.
WIDE_FUNCS = r"^vcdirect_aes_hw::wide::"
WIDE_BRACKET = r"^vcdirect::wdm::vector_state::with_wide_vectors$"
# scripts/check-sys.sh proves the rule bites: with the bracket named as something the image
# lacks, the walk must end at a root and the check fail.
if os.environ.get("CHECK_SYS_WIDE_BRACKET"):
    WIDE_BRACKET = os.environ["CHECK_SYS_WIDE_BRACKET"]
# ... and with the wide path's functions named as something else, its VEX instructions are
# outside them and the check fails.
if os.environ.get("CHECK_SYS_WIDE_FUNCS"):
    WIDE_FUNCS = os.environ["CHECK_SYS_WIDE_FUNCS"]
# W5: the XTS passes (aes-hw/src/x86.rs `xts` on XMM registers, aes-hw/src/wide.rs `xts` on
# YMM, the latter wherever the image has VEX instructions) call nothing: every helper they use
# is inlined, so the tweaks (derived from the tweak key) stay in their own frames, in the
# arrays they wipe. An outlined helper's frame would keep copies nothing wipes.
XMM_PASS = r"^vcdirect_aes_hw::x86::xts$"
WIDE_PASS = r"^vcdirect_aes_hw::wide::xts$"
# scripts/check-sys.sh proves the rule bites: with the XMM pass named after functions that
# call, and with either pass named after no function.
if os.environ.get("CHECK_SYS_XMM_PASS"):
    XMM_PASS = os.environ["CHECK_SYS_XMM_PASS"]
if os.environ.get("CHECK_SYS_WIDE_PASS"):
    WIDE_PASS = os.environ["CHECK_SYS_WIDE_PASS"]
# IAT slot address -> name of the routine imported there.
IAT_SLOTS = {}
# Names of the routines the image imports (their thunks lead into the kernel).
IMPORTED = set()


def check(name, ok, detail):
    global failures
    if ok:
        print(f"  ok   {name}")
    else:
        print(f"  FAIL {name}: {detail}")
        failures += 1


def run(*args):
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


def demangle_v0(name):
    """The identifiers of a v0-mangled path (_RNv...), joined by ::; enough to read a chain."""
    rest = re.sub(r"Cs[0-9A-Za-z]*_", "", name[2:].split(".")[0])
    parts, i = [], 0
    while i < len(rest):
        m = re.match(r"\d+", rest[i:])
        if not m:
            i += 1
            continue
        i += len(m.group(0))
        if i < len(rest) and rest[i] == "_":
            i += 1
        n = int(m.group(0))
        if n:
            parts.append(rest[i:i + n])
        i += n
    return "::".join(parts) if parts else name


def demangle(name):
    """Legacy Rust mangling (_ZN...17h<hash>E) to a path; v0 (_R...) roughly; others unchanged."""
    if name.startswith("_R"):
        return demangle_v0(name)
    m = re.match(r"^_ZN(.*)E(\.llvm\.\d+)?$", name)
    if not m:
        return name
    rest, parts = m.group(1), []
    while rest and rest[0].isdigit():
        n = re.match(r"^(\d+)", rest).group(1)
        part = rest[len(n):len(n) + int(n)]
        rest = rest[len(n) + int(n):]
        parts.append(part)
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    out = "::".join(parts)
    for code, ch in (("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$u7b$", "{"), ("$u7d$", "}"),
                     ("$C$", ","), ("$RF$", "&"), ("$BP$", "*"), ("$u27$", "'"), ("$u5b$", "["),
                     ("$u5d$", "]"), ("$u3b$", ";"), ("$u21$", "!"), ("$u22$", '"')):
        out = out.replace(code, ch)
    out = out.replace("..", "::")
    return out[1:] if out.startswith("_<") else out


def blocks(text, opener):
    """Splits llvm-readobj output into the blocks that start with a line matching `opener`."""
    out, cur = [], None
    for line in text.splitlines():
        if re.match(opener, line.strip()):
            cur = []
            out.append(cur)
        if cur is not None:
            cur.append(line.strip())
    return out


def main():
    flavour, image, mapfile, allowlist = sys.argv[1:5]
    arm64 = flavour == "arm64"
    headers = run("llvm-readobj", "--file-headers", image)
    base = int(re.search(r"ImageBase: (0x[0-9A-Fa-f]+)", headers).group(1), 16)

    # Sections: no W+X; .reloc and .pdata present and non-empty.
    sections = {}
    for b in blocks(run("llvm-readobj", "--sections", image), r"^Section \{"):
        text = "\n".join(b)
        name = re.search(r"Name: (\S+)", text).group(1)
        sections[name] = {
            "va": base + int(re.search(r"VirtualAddress: (0x[0-9A-F]+)", text).group(1), 16),
            "vsize": int(re.search(r"VirtualSize: (0x[0-9A-F]+)", text).group(1), 16),
            "raw": int(re.search(r"PointerToRawData: (0x[0-9A-F]+)", text).group(1), 16),
            "rawsize": int(re.search(r"RawDataSize: (\d+)", text).group(1)),
            "w": "IMAGE_SCN_MEM_WRITE" in text,
            "x": "IMAGE_SCN_MEM_EXECUTE" in text,
        }
    wx = [n for n, s in sections.items() if s["w"] and s["x"]]
    listed = " ".join(sections)
    check(f"no section both writable and executable ({len(sections)} sections: {listed})",
          not wx, f"writable and executable: {' '.join(wx)}")
    for name in (".reloc", ".pdata"):
        s = sections.get(name)
        check(f"{name} present ({s['vsize'] if s else 0} bytes)", bool(s and s["vsize"] > 0),
              "missing or empty")

    # DllCharacteristics (the optional header's Characteristics).
    opt = headers[headers.index("ImageOptionalHeader"):]
    dll = int(re.search(r"Characteristics \[ \((0x[0-9A-F]+)\)", opt).group(1), 16)
    want = {"NX_COMPAT": 0x100, "DYNAMIC_BASE": 0x40, "FORCE_INTEGRITY": 0x80}
    missing = [n for n, bit in want.items() if not dll & bit]
    check(f"DllCharacteristics 0x{dll:04X}: NX_COMPAT, DYNAMIC_BASE, FORCE_INTEGRITY", not missing,
          f"missing {' '.join(missing)}")

    # Imports against the allowlist.
    coff_imports = run("llvm-readobj", "--coff-imports", image)
    # Each import's IAT slot (the table's symbols in order, 8 bytes each on both targets).
    for b in blocks(coff_imports, r"^Import \{"):
        text = "\n".join(b)
        iat = re.search(r"ImportAddressTableRVA: (0x[0-9A-Fa-f]+)", text)
        if iat:
            for i, sym in enumerate(re.findall(r"Symbol: (\S+)", text)):
                IAT_SLOTS[base + int(iat.group(1), 16) + 8 * i] = sym
    imports = sorted(set(re.findall(r"Symbol: (\S+)", coff_imports)))
    IMPORTED.update(imports)
    allowed, bad_lines, names = {}, [], []
    with open(allowlist, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            name, _, reason = line.partition("\t")
            if not reason.strip():
                bad_lines.append(f"line {n} ({name}) has no reason")
            names.append(name)
            allowed[name] = reason
    if names != sorted(names) or len(names) != len(set(names)):
        bad_lines.append("names not sorted or repeated")
    listname = allowlist.rsplit("/", 2)[-2] + "/" + allowlist.rsplit("/", 1)[-1]
    check(f"{listname}: sorted, one reason per name ({len(names)} names)", not bad_lines,
          "; ".join(bad_lines))
    new = [i for i in imports if i not in allowed]
    check(f"{len(imports)} imports, all in {listname}", not new,
          f"not in the allowlist (add with a reason if intended): {' '.join(new)}")
    # Each name from its own DLL: a reason that starts with "hal.dll" pins the name to hal.dll,
    # every other name is ntoskrnl.exe's (the DLL check in check-sys.sh accepts either DLL for
    # any name; this one does not).
    dll_of, dll = {}, None
    for line in coff_imports.splitlines():
        m = re.match(r"\s*Name: (\S+)", line)
        if m:
            dll = m.group(1).lower()
        m = re.match(r"\s*Symbol: (\S+)", line)
        if m:
            dll_of.setdefault(m.group(1), set()).add(dll)
    wrong = []
    for name in imports:
        want = "hal.dll" if allowed.get(name, "").startswith("hal.dll") else "ntoskrnl.exe"
        if dll_of.get(name, set()) != {want}:
            wrong.append(f"{name} from {'/'.join(sorted(dll_of.get(name, ())))}, not {want}")
    check(f"each import from its own DLL (hal.dll: "
          f"{' '.join(n for n in imports if allowed.get(n, '').startswith('hal.dll')) or 'none'})",
          not wrong, "; ".join(wrong))
    stale = [n for n in names if n not in imports]
    if stale:
        print(f"       note: listed but not imported: {' '.join(stale)}")

    # Disassembly.
    if arm64:
        disasm = run("llvm-objdump", "-d", "--mattr=+aes,+v8.5a", image)
    else:
        disasm = run("llvm-objdump", "-d", image)
    insns = []  # (addr, bytes, mnemonic, operands)
    line_re = re.compile(r"^\s*([0-9a-f]+):\s+((?:[0-9a-f]{2} )+)\s*\t(\S+)\s*(.*)$")
    for line in disasm.splitlines():
        m = line_re.match(line)
        if m:
            insns.append((int(m.group(1), 16), bytes.fromhex(m.group(2).replace(" ", "")),
                          m.group(3), m.group(4)))
    if not arm64:
        x86_checks(insns)

    stack_budget(arm64, insns, headers, mapfile, sections, base, image, flavour)
    return failures


LEGACY_PREFIXES = {0xF0, 0xF2, 0xF3, 0x2E, 0x36, 0x3E, 0x26, 0x64, 0x65, 0x66, 0x67}
# Mnemonics that start with "v" but are neither VEX nor EVEX (VMX, segment verification).
NOT_VEX_V = re.compile(r"^(verr|verw|vm[a-z]*)$")


def x86_checks(insns):
    vex, x87, mmx, unknown = [], [], [], 0
    for addr, raw, mnem, ops in insns:
        if mnem == "<unknown>":
            unknown += 1
            continue
        i = 0
        while i < len(raw) and raw[i] in LEGACY_PREFIXES:
            i += 1
        first = raw[i] if i < len(raw) else None
        # In 64-bit mode C4/C5 are always VEX and 62 always EVEX (LES/LDS/BOUND are invalid);
        # 8F with map select >= 8 is XOP. A VEX prefix cannot follow REX.
        encoded = first in (0xC4, 0xC5, 0x62) or (
            first == 0x8F and i + 1 < len(raw) and raw[i + 1] & 0x1F >= 8)
        if encoded or (mnem.startswith("v") and not NOT_VEX_V.match(mnem)):
            vex.append((addr, mnem))
        j = i + 1 if first is not None and 0x40 <= first <= 0x4F else i
        op = raw[j] if j < len(raw) else None
        if op is not None and (0xD8 <= op <= 0xDF or (op == 0x9B and j == len(raw) - 1)):
            x87.append((addr, mnem))
        if mnem == "emms" or "%mm" in ops or mnem in ("femms",):
            mmx.append((addr, mnem))
    check(f"{len(insns)} instructions decoded", unknown == 0, f"{unknown} undecoded")

    def show(lst):
        return ", ".join(f"{m} at 0x{a:x}" for a, m in lst[:5])
    # Where the VEX/EVEX instructions are is checked with the call graph (stack_budget).
    VEX.extend(vex)
    check(f"{len(x87)} x87 and {len(mmx)} MMX instructions", not x87 and not mmx, show(x87 + mmx))


def frames_x64(image):
    """Function start -> (end, bytes below the caller's stack pointer, incl. return address)."""
    out = {}
    for b in blocks(run("llvm-readobj", "--unwind", image), r"^RuntimeFunction \{"):
        text = "\n".join(b)
        start = int(re.search(r"StartAddress: \((0x[0-9A-F]+)\)", text).group(1), 16)
        end = int(re.search(r"EndAddress: \((0x[0-9A-F]+)\)", text).group(1), 16)
        size = 8 * len(re.findall(r"PUSH_NONVOL", text))
        size += sum(int(x) for x in re.findall(r"ALLOC_(?:SMALL|LARGE) size=(\d+)", text))
        if "PUSH_MACHFRAME" in text:
            size += 48
        out[start] = (end, size + 8)
    return out


def frames_arm64(image):
    out = {}
    for b in blocks(run("llvm-readobj", "--unwind", image), r"^RuntimeFunction \{"):
        text = "\n".join(b)
        start = int(re.search(r"Function: (0x[0-9A-F]+)", text).group(1), 16)
        m = re.search(r"FunctionLength: (\d+)", text)
        end = start + int(m.group(1)) if m else start
        fs = re.search(r"FrameSize: (\d+)", text)
        if fs:  # packed unwind data
            size = int(fs.group(1))
        else:
            prologue = text.split("Prologue [", 1)[-1].split("\n]", 1)[0]
            size = sum(int(x) for x in re.findall(r"\[sp, #-(\d+)\]!", prologue))
            size += sum(int(x) for x in re.findall(r"sub sp, #(\d+)", prologue))
        out[start] = (end, size)
    return out


def sp_moves_arm64(insns, func_of):
    """Per function: (prologue bytes, SP decrements the prologue count does not cover).

    The prologue runs from the function's start to its first branch or call (the __chkstk call
    excepted); its SP decrements are summed. Any SP decrement after it, or one whose size is
    not known, is listed as uncovered."""
    out, prev_f = {}, None
    for addr, raw, mnem, ops in insns:
        f = func_of(addr)
        if f is None:
            continue
        if f != prev_f:
            prev_f, in_prologue, x15, last = f, True, None, None
            out[f] = [0, []]
        n = None
        pre = re.search(r"\[sp, #-(\d+)\]!$", ops)
        sub = re.match(r"sp, sp, (?:#(\d+)(?:, lsl #(\d+))?|(\w+)(?:, lsl #(\d+))?)$", ops)
        mov = re.match(r"x15, #(\d+)(?:, lsl #(\d+))?$", ops)
        if mnem in ("stp", "str") and pre:
            n = int(pre.group(1))
        elif mnem == "sub" and sub and sub.group(1):
            n = int(sub.group(1)) << int(sub.group(2) or 0)
        elif mnem == "sub" and sub:
            n = (x15 << int(sub.group(4) or 0)) if sub.group(3) == "x15" and x15 is not None else -1
        elif mnem == "mov" and mov:
            x15 = int(mov.group(1)) << int(mov.group(2) or 0)
        elif mnem == "movk" and mov and x15 is not None:
            x15 |= int(mov.group(1)) << int(mov.group(2) or 0)
        elif mnem == "bl" and last in ("mov", "movk"):
            pass  # __chkstk: probes the pages of the allocation in x15, moves nothing
        elif mnem in ("bl", "blr", "br", "b", "ret", "cbz", "cbnz", "tbz", "tbnz") or \
                mnem.startswith("b."):
            in_prologue = False
        elif re.match(r"sp, ", ops) and mnem not in ("add", "ldp", "ldr") and \
                not mnem.startswith(("st", "cmp", "cmn", "tst")):
            n = -1  # another write to SP (mov sp, ...): a size this check cannot know
        if n is not None:
            if in_prologue and n >= 0:
                out[f][0] += n
            else:
                out[f][1].append(f"{mnem} {ops} at 0x{addr:x}")
        last = mnem
    return out


def stack_budget(arm64, insns, headers, mapfile, sections, base, image, flavour):
    frames = frames_arm64(image) if arm64 else frames_x64(image)
    text = sections[".text"]
    lo, hi = text["va"], text["va"] + text["vsize"]
    names = {}
    with open(mapfile, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r"^\s*[0-9a-f]{4}:[0-9a-f]{8}\s+(\S+)\s+([0-9a-f]{16})\s", line)
            if m:
                va = int(m.group(2), 16)
                if lo <= va < hi and va not in names:
                    names[va] = demangle(m.group(1))
    starts = sorted(set(frames) | set(names))
    start_set = set(starts)
    iat = re.search(r"IATRVA: (0x[0-9A-F]+)\s+IATSize: (0x[0-9A-F]+)", headers)
    iat_lo = base + int(iat.group(1), 16)
    iat_hi = iat_lo + int(iat.group(2), 16)

    def func_of(addr):
        k = bisect.bisect_right(starts, addr) - 1
        return starts[k] if k >= 0 else None

    def name(f):
        return names.get(f, f"fn@0x{f:x}")

    unwind_frames = frames
    if arm64:
        moves = sp_moves_arm64(insns, func_of)
        frames = {f: (None, m[0]) for f, m in moves.items()}

    def frame(f):
        return frames[f][1] if f in frames else (0 if arm64 else 8)

    # Pointers stored in data sections, and the Rust vtables among them: [drop_in_place or 0,
    # size, align, method...]. An indirect call through slot `off` of a loaded vtable may reach
    # any function stored at that offset of any vtable.
    with open(image, "rb") as img:
        data = img.read()
    taken, slots = set(), {}
    for sname, s in sections.items():
        if s["x"] or sname in (".pdata", ".reloc"):
            continue
        blob = data[s["raw"]:s["raw"] + min(s["rawsize"], s["vsize"])]
        q = [int.from_bytes(blob[o:o + 8], "little") for o in range(0, len(blob) - 7, 8)]
        taken.update(v for v in q if v in start_set)
        for k in range(len(q) - 3):
            align = q[k + 2]
            if ((q[k] == 0 or q[k] in start_set) and q[k + 1] < 1 << 32 and 0 < align <= 4096
                    and align & (align - 1) == 0 and q[k + 3] in start_set):
                if q[k]:
                    slots.setdefault(0, set()).add(q[k])
                j = k + 3
                while j < len(q) and q[j] in start_set:
                    slots.setdefault(8 * (j - k), set()).add(q[j])
                    j += 1

    calls = {f: set() for f in starts}
    call_sites = {f: [] for f in starts}  # (address, target) of each direct call, x64
    iat_calls = {}  # function -> [(address, imported routine)] of its calls through the IAT
    tails = {f: set() for f in starts}
    indirect = {f: set() for f in starts}  # slot offsets; None = unknown pointer
    # register -> vtable slot offsets loaded into it in this function (a set: two branches may
    # load one register from different slots before a shared `blr`)
    loaded = {}
    hexaddr = re.compile(r"^(?:0x)?([0-9a-f]+)\b")
    prev_f = None
    for addr, raw, mnem, ops in insns:
        f = func_of(addr)
        if f is None:
            continue
        if f != prev_f:
            loaded, adrp, prev_f = {}, {}, f
        nxt = bisect.bisect_right(starts, addr)
        fend = starts[nxt] if nxt < len(starts) else hi
        if arm64:
            target = hexaddr.match(ops)
            m = re.match(r"(x\d+), \[(x\d+)(?:, #(\d+))?\]$", ops)
            if mnem == "ldr" and m:
                loaded.setdefault(m.group(1), set()).add(int(m.group(3) or 0))
                continue
            if mnem == "bl" and target:
                calls[f].add(int(target.group(1), 16))
            elif mnem in ("blr", "br"):
                reg = ops.strip()
                if reg in loaded:
                    indirect[f].update(loaded[reg])
                elif mnem == "blr":
                    indirect[f].add(None)
                # `br` from a register not loaded from a vtable: a jump table or import thunk
            elif mnem == "b" or mnem.startswith("b.") or mnem in ("cbz", "cbnz", "tbz", "tbnz"):
                t = re.search(r"0x([0-9a-f]+)", ops)
                if t:
                    t = int(t.group(1), 16)
                    if not f <= t < fend:
                        tails[f].add(t)
            elif mnem == "adrp":
                m = re.match(r"(x\d+), 0x([0-9a-f]+)", ops)
                if m:
                    adrp[m.group(1)] = int(m.group(2), 16)
            elif mnem == "add":
                m = re.match(r"(x\d+), (x\d+), #(\d+)$", ops)
                if m and m.group(2) in adrp and adrp[m.group(2)] + int(m.group(3)) in start_set:
                    taken.add(adrp[m.group(2)] + int(m.group(3)))
            m = re.match(r"([xw]\d+),", ops)
            if m and not re.match(r"^(cmp|cmn|tst|st|cb|tb|b)", mnem):
                loaded.pop(m.group(1).replace("w", "x"), None)
            continue
        if mnem.startswith(("call", "jmp")) or (mnem.startswith("j") and not ops.startswith("*")):
            is_call = mnem.startswith("call")
            if ops.startswith("*"):
                rip = re.match(r"\*(-?\d+)\(%rip\)", ops)
                slot = re.match(r"\*(\d*)\(%\w+\)$", ops)
                reg = re.match(r"\*(%\w+)$", ops)
                if rip:
                    slot = addr + len(raw) + int(rip.group(1))
                    if iat_lo <= slot < iat_hi:
                        if is_call:
                            iat_calls.setdefault(f, []).append((addr, IAT_SLOTS.get(slot)))
                        continue  # a kernel routine through the import address table
                    indirect[f].add(None)
                elif slot:
                    indirect[f].add(int(slot.group(1) or 0))
                elif reg and reg.group(1) in loaded:
                    indirect[f].add(loaded[reg.group(1)])
                elif is_call:
                    indirect[f].add(None)
                # else `jmp *%reg` not loaded from a vtable: a jump table inside the function
            else:
                t = hexaddr.match(ops)
                if t:
                    t = int(t.group(1), 16)
                    if is_call:
                        calls[f].add(t)
                        call_sites[f].append((addr, t))
                    elif not f <= t < fend:
                        tails[f].add(t)
            continue
        m = re.match(r"(-?\d*)\((%\w+)\), (%\w+)$", ops)
        if mnem == "movq" and m and m.group(2) != "%rip":
            loaded[m.group(3)] = int(m.group(1) or 0)
            continue
        if mnem.startswith("lea"):
            rip = re.search(r"\(%rip\), %\w+\s+# 0x([0-9a-f]+)", ops)
            if rip and int(rip.group(1), 16) in start_set:
                taken.add(int(rip.group(1), 16))
        dest = re.search(r"(%\w+)$", ops)
        if dest and not re.match(r"^(test|cmp|push|bt)", mnem):
            loaded.pop(dest.group(1), None)

    callbacks = {f for f in starts if any(re.search(p, name(f)) for p in KERNEL_CALLBACKS)}
    taken -= callbacks

    # What the narrowing rules kept, so a rule that no longer matches fails instead of hiding
    # a call (a renamed trait, another mangling, a second indirect call in the function).
    narrowed, narrowed_slots, closure_empty = {}, {}, set()

    def targets(f):
        if any(re.search(p, name(f)) for p in KERNEL_INDIRECT):
            return set()
        # An import thunk (ARM64: adrp/ldr x16 from the IAT, br x16) jumps into the kernel,
        # not through a vtable slot of the driver: its stack is the kernel's, not counted.
        if name(f) in IMPORTED:
            return set()
        out = set()
        for off in indirect.get(f, ()):
            out |= taken if off is None else slots.get(off, set())
        if any(re.search(p, name(f)) for p in CLOSURE_ONLY):
            out = {t for t in out if re.search(CLOSURE_NAME, name(t))}
            if indirect.get(f) and not out:
                closure_empty.add(name(f))
        for caller, callee in INJECTION_ONLY.items():
            if re.search(caller, name(f)):
                out = {t for t in out if re.search(callee, name(t))}
                narrowed.setdefault(name(f), set()).update(name(t) for t in out)
                narrowed_slots.setdefault(name(f), set()).update(indirect.get(f, ()))
        return out - callbacks

    def node(t):
        return t if t in start_set else func_of(t)

    memo, recursion = {}, set()
    # Functions left out of `worst` (the thread-end burn's check measures the bodies without it).
    skipped = set()

    def allowed(g):
        return next((v for p, v in RECURSION.items() if re.search(p, name(g))), None)

    def worst(f, path):
        """Worst stack below the caller's stack pointer from f; returns (bytes, chain).

        `path` lists the functions from the root to f. A call back to an allowed recursive
        function g adds the frames of the cycle g .. f (depth - 1) more times, on top of f's
        deepest other callee."""
        if f in memo:
            return memo[f]
        best, extra = (0, []), 0
        for g in [node(g) for g in calls.get(f, ())] + sorted(targets(f)):
            if g is None or g in skipped:
                continue
            if g in path:
                bound = allowed(g)
                if bound:
                    cycle = sum(frame(c) for c in path[path.index(g):])
                    extra = max(extra, (bound[0] - 1) * cycle)
                recursion.add((f, g))
                continue
            sub = worst(g, path + [g])
            if sub[0] > best[0]:
                best = sub
        here = (frame(f) + extra + best[0], [f] + best[1])
        for g in tails.get(f, ()):
            g = node(g)
            if g is None or g in path:
                continue
            sub = worst(g, path + [g])
            if sub[0] > here[0]:
                here = sub
        memo[f] = here
        return here

    if arm64:
        # Every SP decrement of the code is in a prologue and counted, and the frame taken from
        # the code is at least what the unwind data records.
        bad = []
        for f, (size, uncovered) in moves.items():
            if uncovered:
                bad.append(f"{name(f)} ({uncovered[0]} not counted)")
            elif f in unwind_frames and unwind_frames[f][1] > size:
                bad.append(f"{name(f)} (code {size}, unwind {unwind_frames[f][1]})")
        over = sum(1 for f in unwind_frames if f in moves and moves[f][0] > unwind_frames[f][1])
        check(f"frames agree with the code ({sum(1 for m in moves.values() if m[0])} functions "
              f"move SP, all in their prologue; {over} allocate more than their unwind prologue "
              "records, after setting FP)", not bad, "; ".join(bad[:3]))
    else:
        # The unwind data must describe every frame the code makes: the largest RSP decrement
        # of each function (`sub $N, %rsp`, or `mov $N, %eax; call __chkstk; sub %rax, %rsp`)
        # is within its recorded allocation (x64 functions that move RSP without unwind data
        # would break both this budget and the kernel's unwinder).
        subs, bad, eax, prev_f = {}, [], None, None
        for addr, raw, mnem, ops in insns:
            f = func_of(addr)
            if f != prev_f:
                eax, prev_f = None, f
            imm = re.match(r"\$(0x[0-9a-f]+|\d+), %rsp$", ops)
            reg = re.match(r"%(\w+), %rsp$", ops)
            n = None
            if mnem in ("subq", "sub") and imm:
                n = int(imm.group(1), 0)
            elif mnem in ("subq", "sub") and reg:
                n = eax if reg.group(1) == "rax" and eax is not None else -1
            m = re.match(r"\$(0x[0-9a-f]+|\d+), %eax", ops)
            if mnem in ("movl", "mov") and m:
                eax = int(m.group(1), 0)
            elif not mnem.startswith("call"):
                eax = None  # __chkstk keeps RAX; anything else between may not
            if n is None:
                continue
            if n < 0:
                bad.append(f"{name(f)} ({mnem} {ops}: size unknown)")
                continue
            subs[f] = max(subs.get(f, 0), n)
        for f, n in subs.items():
            if f not in frames or frames[f][1] - 8 < n:
                bad.append(f"{name(f)} (sub {n}, unwind {frame(f) - 8 if f in frames else 'none'})")
        check(f"frames agree with the code ({len(subs)} functions move RSP by `sub $N, %rsp` "
              "or __chkstk, all within their unwind data)", not bad, "; ".join(bad[:3]))

    def allowed_name(n):
        return next(v for p, v in RECURSION.items() if re.search(p, n))

    def frame_of(n):
        return max(frame(f) for f in starts if name(f) == n)

    # The allocation-injection seam exists only in the Wine build; there its one indirect call
    # must reach exactly the injection's `fails` through one vtable slot (the first method's).
    seam = [f for f in starts if any(re.search(c, name(f)) for c in INJECTION_ONLY)
            or re.search(r"AllocationInjection>::fails$|once_cell", name(f))]
    if flavour == "x64-wine":
        for f in starts:
            if any(re.search(c, name(f)) for c in INJECTION_ONLY):
                targets(f)
        ok = bool(narrowed) and all(narrowed.values()) and all(
            v == {24} for v in narrowed_slots.values())
        check("the allocation-injection seam's indirect call reaches only "
              "AllocationInjection::fails, through one slot",
              ok, f"kept {narrowed or 'no caller'}, slots {narrowed_slots}")
    else:
        check("no allocation-injection seam in the product image", not seam,
              ", ".join(sorted({name(f) for f in seam})[:3]))
    for f in starts:
        targets(f)
    check("every closure-only indirect call still reaches a closure", not closure_empty,
          ", ".join(sorted(closure_empty)[:3]))
    if not arm64:
        wide_path(starts, func_of, name, node, calls, tails, targets, taken, callbacks,
                  call_sites, iat_calls)
        xmm = [f for f in starts if re.search(XMM_PASS, name(f))]
        ymm = [f for f in starts if re.search(WIDE_PASS, name(f))]
        calling = sorted({name(f) for f in xmm + ymm
                          if calls[f] or tails[f] or indirect[f] or iat_calls.get(f)})
        # Both passes must be found, each in its two copies (encryption and decryption): the
        # XMM one always, the VAES one wherever VEX is.
        found = len(xmm) == 2 and (len(ymm) == 2 or not VEX)
        check(f"the XTS passes call nothing ({len(xmm)} XMM and {len(ymm)} VAES copies; their "
              "tweaks stay in the frames they wipe, W5)", found and not calling,
              ", ".join(calling[:3]) if calling else "not two copies of each pass")

    biggest = max(starts, key=frame)
    unknown = sum(1 for f in starts if None in indirect[f])
    print(f"       {len(starts)} functions, {len(unwind_frames)} with unwind data; largest frame "
          f"{frame(biggest):,} bytes ({name(biggest)}); indirect calls: "
          f"{sum(len(v) for v in slots.values())} "
          f"vtable entries, {len(taken)} address-taken functions for the {unknown} functions whose "
          "pointer is not from a vtable")
    # W5: the portable AES path keys the `aes` crate by value in `key_into` and its callees,
    # then `burn_stack` zeroes the stack from the same caller: its frame must reach at least as
    # deep as key_into's deepest path, or copies of round keys stay below the burnt area.
    memo.clear()
    keyings = [f for f in starts if name(f) == BURN_COVERS[0]]
    burns = [f for f in starts if name(f) == BURN_COVERS[1]]
    if keyings or burns:
        deepest = max((worst(f, [f])[0] for f in keyings), default=0)
        burnt = min((frame(f) for f in burns), default=0)
        check(f"the portable AES keys' stack burn covers their keying ({burnt:,} bytes burnt, "
              f"{deepest:,} used by {BURN_COVERS[0]})",
              bool(keyings) and bool(burns) and burnt >= deepest + BURN_MARGIN,
              f"{len(keyings)} keying and {len(burns)} burn functions; raise BURN in "
              "driver/src/crypto/xts.rs")
    else:
        print("       no portable AES keying in this image (nothing to burn)")
    # W5: every system thread burns its stack as its last step (`thread_start` calls
    # `burn_thread_stack` after the body returned): the burn must reach the margin deeper than
    # the deepest path of the bodies below `thread_start`.
    burners = [f for f in starts if name(f) == THREAD_BURN[1]]
    thread_roots = [f for f in starts if name(f) == THREAD_BURN[0]]
    memo.clear()
    skipped.update(burners)
    bodies = max((worst(r, [r])[0] - frame(r) for r in thread_roots), default=0)
    skipped.clear()
    memo.clear()
    burnt = min((frame(f) for f in burners), default=0)
    check(f"every system thread's end burn covers its body ({burnt:,} bytes burnt, {bodies:,} "
          f"used below {THREAD_BURN[0]})",
          bool(burners) and bool(thread_roots) and burnt >= bodies + BURN_MARGIN,
          f"{len(thread_roots)} thread starts and {len(burners)} burns; raise THREAD_BURN in "
          "driver/src/crypto/xts.rs")
    for path, patterns in ROOTS.items():
        roots = [f for f in starts if any(re.search(p, name(f)) for p in patterns)]
        if not roots:
            check(f"stack budget, {path} path", False, f"no function matches {patterns}")
            continue
        memo.clear()
        recursion.clear()
        (size, chain), root = max(((worst(r, [r]), r) for r in roots), key=lambda x: x[0][0])
        shown = " > ".join(name(c) for c in chain)
        check(f"max stack {size:,} bytes on the {path} path (limit {BUDGETS[path]:,})",
              size <= BUDGETS[path], f"over budget via {shown}")
        print(f"       via {shown}")
        bounded = sorted({name(g) for f, g in recursion if allowed(g)})
        for g in bounded:
            depth, why = allowed_name(g)
            print(f"       recursion {g}: {depth} frames counted ({frame_of(g):,} bytes each; "
                  f"{why})")
        unbounded = sorted({f"{name(f)} -> {name(g)}" for f, g in recursion if not allowed(g)})
        check(f"no unbounded recursion on the {path} path ({len(bounded)} allowed with a depth "
              "bound)", not unbounded,
              f"{len(unbounded)} recursive calls, e.g. {'; '.join(unbounded[:3])} (add to "
              "RECURSION with a depth bound and its reason, or remove the recursion)")


def wide_path(starts, func_of, name, node, calls, tails, targets, taken, callbacks,
              call_sites, iat_calls):
    """W13 on x64: VEX/EVEX instructions only in the wide path's functions, and every call path
    into them through the processor-state bracket: walking the callers back from them, every
    walk ends at the bracket, never at a root, a kernel callback or an address-taken function
    (which an indirect call could reach from anywhere)."""
    where = {}
    for addr, mnem in VEX:
        where.setdefault(func_of(addr), []).append((addr, mnem))
    outside = [(a, m, f) for f, lst in where.items() for a, m in lst
               if f is None or not re.search(WIDE_FUNCS, name(f))]
    inside = sorted({name(f) for f in where if f is not None and re.search(WIDE_FUNCS, name(f))})
    check(f"{len(VEX)} VEX/EVEX instructions, all in the wide path ({', '.join(inside) or 'none'})",
          not outside, ", ".join(f"{m} at 0x{a:x} in {name(f) if f else '?'}"
                                 for a, m, f in outside[:5]))
    if not where:
        return
    callers = {}
    for f in starts:
        out = {node(g) for g in calls.get(f, ())} | {node(g) for g in tails.get(f, ())} | targets(f)
        for g in out:
            if g is not None:
                callers.setdefault(g, set()).add(f)
    brackets = {f for f in starts if re.search(WIDE_BRACKET, name(f))}
    seen, todo, escaped = set(), [f for f in where if f is not None], []
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        if f in brackets:
            continue
        ups = callers.get(f, set())
        if not ups or f in taken or f in callbacks:
            escaped.append(f)
        todo.extend(ups)
    check(f"every call path into the wide path passes through the processor-state save "
          f"({len(seen)} functions walked back, {len(brackets & seen)} bracket)",
          bool(brackets & seen) and not escaped,
          "no bracket" if not brackets & seen else
          "reached without it from " + ", ".join(sorted(name(f) for f in escaped)[:3]))
    # Inside the bracket, in address order: one save, then every call that leads to the wide
    # path, then one restore (the code between is straight-line in the compiled bracket: the
    # token exists only once the save succeeded, which the types guarantee).
    leads = set(seen)  # every function walked back is one from which the wide path is reached
    for b in brackets & seen:
        # A kernel routine is called through the IAT or through its import thunk.
        kernel = iat_calls.get(b, []) + [(a, name(node(t))) for a, t in call_sites.get(b, [])
                                        if node(t) is not None]
        saves = [a for a, n in kernel if n == "KeSaveExtendedProcessorState"]
        restores = [a for a, n in kernel if n == "KeRestoreExtendedProcessorState"]
        inner = [a for a, t in call_sites.get(b, []) if node(t) in leads and node(t) != b]
        ordered = (len(saves) == 1 and len(restores) == 1 and bool(inner)
                   and all(saves[0] < a < restores[0] for a in inner))
        check(f"{name(b)}: one KeSaveExtendedProcessorState, then the {len(inner)} call(s) into "
              "the wide path, then one KeRestoreExtendedProcessorState",
              ordered, f"saves at {[hex(a) for a in saves]}, restores at "
              f"{[hex(a) for a in restores]}, calls at {[hex(a) for a in inner]}")
    missing = {"KeSaveExtendedProcessorState", "KeRestoreExtendedProcessorState"} - IMPORTED
    check("the bracket's KeSaveExtendedProcessorState and KeRestoreExtendedProcessorState are "
          "imported", not missing, f"missing {sorted(missing)}")


if __name__ == "__main__":
    sys.exit(min(main(), 100))
