#!/usr/bin/env python3
"""W5 under Wine: where the volume's key bytes are in the memory of the driver's process.

Usage (as root, or as the process's owner with ptrace rights; the master key, 64 bytes in hex,
is the first line of standard input, never an argument other processes could read):
  w5-wine-key-bytes.py PID mounted BLOCK_ADDR BLOCK_LEN < master-key-hex
  w5-wine-key-bytes.py PID erased|dismounted < master-key-hex
  w5-wine-key-bytes.py --self-test

Reads every readable mapping of winedevice.exe PID through /proc/PID/maps and /proc/PID/mem and
finds every occurrence of: the 15 AES-256 round keys of each half of the 64-byte XTS master key
(the data and the tweak key; round keys 0 and 1 are the master key's halves); the 13 middle
round keys of the data key's decryption schedule, InvMixColumns of round keys 1..13 (FIPS-197
5.3.5, as AESIMC stores them in aes-hw's data_dec); every 8-byte window of the master key (a
spilled 64-bit register). All are computed here (FIPS-197 key expansion, the S-box from
GF(2^8) inverses), not taken from the driver. Windows inside a round-key hit are that hit; the
windows of one copy of the key are one hit. Each hit is classified by where it lies:

  key block   inside BLOCK_ADDR..+BLOCK_LEN, the cipher's one block, which the Wine build of
              vcdirect.sys names in its log at each mount ("W5 key block of volume N at ...");
              Wine's heap does not say who owns a block, so the driver's own word is the only
              exact way to tell its block from any other.
  stack       the stack of a Windows thread of the process (its TEB's DeallocationStack up to
              StackBase): the driver's stacks; always a failure, whatever the bytes around it
              look like (Wine copies a signal's FXSAVE area, magic and all, into the CONTEXT it
              builds on the Windows stack; Linux itself never writes there: Wine's handlers run
              on the sigaltstack);
  linux       an XMM register Linux saved in a signal frame on a thread's signal stack (the
              part of its TEB block from +0x3800): the hit is in an XMM slot of a 64-byte
              aligned FXSAVE area with FP_XSTATE_MAGIC1 in its software-reserved bytes and
              FP_XSTATE_MAGIC2 right after its xstate_size bytes, and below it an rt_sigframe
              whose sigcontext.fpstate points to that area and whose uc_stack is this signal
              stack; listed, not failed;
  wine        any other byte of a Wine 8 thread block (the TEB and the signal stack), listed,
              not failed;
  image       a file mapping (vcdirect.sys or another module): a failure;
  other       any other memory (other heap blocks, pool the driver allocated): a failure.

A TEB is only taken as one when it starts a 64 KiB aligned block (Wine 8's signal_stack_mask
0xffff) of an anonymous mapping, NtTib.Self (+0x30) points to it, its PEB pointer (+0x60) is the
one every other TEB has and StackLimit < StackBase; any other page that looks like one is
counted as refused and excuses nothing. These are Wine 8's rules: the check fails unless the
mapped ntdll.so says "wine-8.x".

Wine 8.0's ntoskrnl makes no copy of the mount IOCTL's input of its own: it hands the buffer it
received the request in to the driver as the system buffer (the reply is shorter than the
input), and the driver wipes it; a hit there is "other", the driver's failure. Not read: the
wineserver process, which keeps a copy of each IOCTL's input (memdup) while it passes the
request on, and vcctl's process, which built the request; both are outside the driver.

"mounted" passes when every hit is in the key block or listed, and the key block holds all 30
round keys (so the scan did read the driver's memory with the right key; the summary line says
"in key block: 30 of 30 round keys"); "erased" and "dismounted" pass when no hit is left but
listed ones. Memory that cannot be read fails the check, never skips it. Prints each hit, then
one summary line; exits 0 on pass, 1 on failure, 2 on bad usage.
"""
import re
import struct
import sys

FP_XSTATE_MAGIC1 = 0x46505853
FP_XSTATE_MAGIC2 = 0x46505845
PAGE = 4096
# Wine 8's thread block (dlls/ntdll/unix, x86_64: signal_stack_mask 0xffff, teb_size 0x3800):
# 64 KiB aligned, the TEB at its start, the thread's signal stack (its sigaltstack) from +0x3800
# to its end.
TEB_BLOCK = 0x10000
SIGNAL_STACK = 0x3800
# The kernel's pseudo mappings /proc/PID/mem cannot read.
UNREADABLE_BY_DESIGN = ("[vvar]", "[vvar_vclock]", "[vsyscall]")
# Hits that are listed, not failed.
LISTED = ("key block", "linux", "wine")


def gf_mul(a, b):
    p = 0
    while b:
        if b & 1:
            p ^= a
        a = ((a << 1) ^ (0x1B if a & 0x80 else 0)) & 0xFF
        b >>= 1
    return p


def sbox():
    inv = [0] * 256
    for x in range(1, 256):
        inv[x] = next(y for y in range(1, 256) if gf_mul(x, y) == 1)
    rot = lambda v, n: ((v << n) | (v >> (8 - n))) & 0xFF
    return [v ^ rot(v, 1) ^ rot(v, 2) ^ rot(v, 3) ^ rot(v, 4) ^ 0x63 for v in inv]


def round_keys(key, s):
    """The 15 round keys of AES-256 (FIPS-197 section 5.2)."""
    w = [list(key[i : i + 4]) for i in range(0, 32, 4)]
    rcon = 1
    for i in range(8, 60):
        t = list(w[i - 1])
        if i % 8 == 0:
            t = [s[t[1]] ^ rcon, s[t[2]], s[t[3]], s[t[0]]]
            rcon = gf_mul(rcon, 2)
        elif i % 8 == 4:
            t = [s[b] for b in t]
        w.append([a ^ b for a, b in zip(w[i - 8], t)])
    return [bytes(sum(w[4 * r : 4 * r + 4], [])) for r in range(15)]


def inv_mix_columns(rk):
    """InvMixColumns of a round key (FIPS-197 5.3.3): the decryption schedule's middle round
    keys in the equivalent inverse cipher (5.3.5), as AESIMC makes them."""
    out = []
    for c in range(4):
        a = rk[4 * c : 4 * c + 4]
        for r in range(4):
            out.append(gf_mul(a[r], 14) ^ gf_mul(a[(r + 1) % 4], 11)
                       ^ gf_mul(a[(r + 2) % 4], 13) ^ gf_mul(a[(r + 3) % 4], 9))
    return bytes(out)


def key_patterns(key):
    """What is searched: {bytes: (name, is_round_key)}. The 30 round keys, the 13 middle round
    keys of the data key's decryption schedule, every 8-byte window of the master key."""
    s = sbox()
    patterns = {}
    for half, name in ((key[:32], "data"), (key[32:], "tweak")):
        rks = round_keys(half, s)
        for i, rk in enumerate(rks):
            patterns.setdefault(rk, (f"{name} round key {i}", True))
        if name == "data":
            for i in range(1, 14):
                patterns.setdefault(inv_mix_columns(rks[i]), (f"data decryption round key {i} (InvMixColumns)", True))
    for k in range(len(key) - 7):
        patterns.setdefault(key[k : k + 8], (f"master key bytes {k}..{k + 8}", False))
    return patterns


def read_mappings(pid):
    """(lo, hi, perms, name, bytes) of each readable mapping; raises on one that fails."""
    out = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps.read().splitlines():
            f = line.split(None, 5)
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            name = f[5].strip() if len(f) > 5 else ""
            if "r" not in f[1] or name in UNREADABLE_BY_DESIGN:
                continue
            mem.seek(lo)
            data = mem.read(hi - lo)
            if len(data) != hi - lo:
                raise OSError(f"short read of {f[0]} {name}")
            out.append((lo, hi, f[1], name, data))
    return out


def wine_version(maps):
    """Wine's build string from the mapped ntdll.so ("wine-8.0 (...)"), or None."""
    for _, _, _, name, data in maps:
        if name.endswith("/ntdll.so"):
            m = re.search(rb"(?<![\w.-])wine-(\d+)\.(\d+)[\w.~+ ()-]*", data)
            if m:
                return m.group(0).decode(), int(m.group(1))
    return None


def tebs(maps):
    """(valid, rejected): each TEB of Wine 8 as (address, stack low, stack base), and each page
    that looks like one (NtTib.Self at +0x30 points to it) but is not, with the reason. A TEB
    starts a 64 KiB aligned block of an anonymous mapping, has StackLimit < StackBase and the
    PEB pointer (+0x60) every other TEB has."""
    found = []
    for lo, hi, _, name, data in maps:
        if name:
            continue
        for off in range(0, len(data) - PAGE + 1, PAGE):
            if struct.unpack_from("<Q", data, off + 0x30)[0] == lo + off:
                base, limit = struct.unpack_from("<QQ", data, off + 0x08)
                peb = struct.unpack_from("<Q", data, off + 0x60)[0]
                dealloc = struct.unpack_from("<Q", data, off + 0x1478)[0] if off + 0x1480 <= len(data) else 0
                found.append((lo + off, base, limit, peb, dealloc))
    aligned = [f[3] for f in found if f[0] % TEB_BLOCK == 0]
    peb = max(set(aligned), key=aligned.count) if aligned else None
    valid, rejected = [], []
    for at, base, limit, this_peb, dealloc in found:
        if at % TEB_BLOCK:
            rejected.append((at, "not 64 KiB aligned"))
        elif this_peb != peb:
            rejected.append((at, f"PEB {this_peb:#x}, not the process's {peb:#x}"))
        elif not 0 < limit < base:
            rejected.append((at, f"StackLimit {limit:#x} not below StackBase {base:#x}"))
        else:
            valid.append((at, dealloc if 0 < dealloc < base else limit, base))
    return valid, rejected


def in_signal_frame(read_at, teb, addr):
    """True if addr is in one of the 16 XMM slots of the FXSAVE area of a signal frame Linux
    wrote on the thread's signal stack: the area 64-byte aligned with FP_XSTATE_MAGIC1 in its
    software-reserved bytes and FP_XSTATE_MAGIC2 right after its xstate_size bytes, and below it
    the rt_sigframe whose sigcontext.fpstate points to it and whose uc_stack is this signal
    stack."""
    lo, hi = teb + SIGNAL_STACK, teb + TEB_BLOCK
    sig = read_at(lo, hi - lo)
    if sig is None or not lo <= addr < hi:
        return False
    qword = lambda at: struct.unpack_from("<Q", sig, at - lo)[0] if lo <= at <= hi - 8 else None
    dword = lambda at: struct.unpack_from("<I", sig, at - lo)[0] if lo <= at <= hi - 4 else None
    for i in range(16):
        fx = addr - 160 - 16 * i
        if fx % 64 or fx < lo or addr + 16 > fx + 416 or dword(fx + 464) != FP_XSTATE_MAGIC1:
            continue
        size = dword(fx + 480)
        if size is None or not 512 <= size <= hi - fx - 4 or dword(fx + size) != FP_XSTATE_MAGIC2:
            continue
        for p in range(lo + 0xF0, fx, 8):
            frame = p - 0xF0
            if qword(p) == fx and qword(frame + 0x18) == lo and qword(frame + 0x28) == hi - lo:
                return True
    return False


def scan(maps, key, phase, block, wine_required=True):
    """Classifies every hit: (exit code, hit lines, summary line)."""
    patterns = key_patterns(key)
    version = wine_version(maps)
    if wine_required and (version is None or version[1] != 8):
        return 1, [], f"FAIL not Wine 8 ({version[0] if version else 'no wine build string in ntdll.so'}): the TEB rules are Wine 8's"
    threads, rejected = tebs(maps) if wine_required else ([], [])

    def read_at(addr, n):
        for lo, hi, _, _, data in maps:
            if lo <= addr and addr + n <= hi:
                return data[addr - lo : addr - lo + n]
        return None

    raw = []
    for lo, hi, perms, name, data in maps:
        for pattern, (what, whole) in patterns.items():
            i = data.find(pattern)
            while i >= 0:
                raw.append((lo + i, len(pattern), what, whole, (lo, hi, perms, name)))
                i = data.find(pattern, i + 1)
    # A window of the master key inside a round-key hit is that hit; the windows of one copy
    # (same start of the key) are one hit.
    covered = set()
    for addr, n, _, whole, _ in raw:
        if whole:
            covered.update(range(addr, addr + n))
    hits, copies = [], {}
    for addr, n, what, whole, where in raw:
        if whole:
            hits.append((addr, n, what, where))
        elif not all(a in covered for a in range(addr, addr + n)):
            k = int(what.split()[3].split("..")[0])
            copies.setdefault((addr - k, where), []).append(k)
    for (start, where), ks in copies.items():
        hits.append((start + min(ks), max(ks) + 8 - min(ks), f"master key bytes {min(ks)}..{max(ks) + 8}", where))
    hits.sort()

    counts, bad, lines, in_block = {}, [], [], set()
    for addr, n, what, (lo, hi, perms, name) in hits:
        stack = next((t for t in threads if t[1] <= addr < t[2]), None)
        wine = next((t for t in threads if t[0] <= addr < t[0] + TEB_BLOCK), None)
        if block and block[0] <= addr and addr + n <= block[0] + block[1]:
            kind, detail = "key block", f"the cipher's block at {block[0]:#x}"
            in_block.add(what)
        elif stack:
            kind, detail = "stack", f"the stack of the thread with TEB {stack[0]:#x}"
        elif wine and in_signal_frame(read_at, wine[0], addr):
            kind, detail = "linux", f"an XMM register in a signal frame on the signal stack of TEB {wine[0]:#x}"
        elif wine:
            kind, detail = "wine", f"the TEB and signal stack at {wine[0]:#x}"
        elif name:
            kind, detail = "image", name
        else:
            kind, detail = "other", f"anonymous {lo:#x}-{hi:#x} {perms} (heap or pool)"
        counts[kind] = counts.get(kind, 0) + 1
        line = f"{kind}: {what} at {addr:#x} ({detail})"
        lines.append(line)
        if kind not in LISTED:
            bad.append(line)
    scanned = sum(hi - lo for lo, hi, *_ in maps)
    summary = ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no hit"
    head = (f"{phase}: {scanned} bytes of {len(maps)} mappings, "
            + (f"{version[0]}, " if version else "")
            + f"{len(threads)} thread stacks ({len(rejected)} TEB-like pages refused); {summary}")
    if block:
        rks = sum(1 for w in in_block if " round key " in w and "decryption" not in w)
        dec = sum(1 for w in in_block if "decryption" in w)
        head += f"; in key block: {rks} of 30 round keys, {dec} of 13 decryption round keys"
    if bad:
        return 1, lines, f"FAIL {head}; the driver's: {bad[0]}" + (f" and {len(bad) - 1} more" if len(bad) > 1 else "")
    if block and rks != 30:
        return 1, lines, f"FAIL {head}: not the driver's memory"
    return 0, lines, f"PASS {head}"


def synthetic_process(key, version="wine-8.0 (self-test)"):
    """A made-up Wine 8 process: ntdll.so's build string, two threads (TEB blocks at 64 KiB
    aligned addresses, their Windows stacks apart), and a key block holding the data key's
    schedules and the tweak key's. Returns (maps as a dict of name -> [lo, bytearray]), block)."""
    s = sbox()
    d, t = round_keys(key[:32], s), round_keys(key[32:], s)
    cipher = b"".join(d[::-1][:1] + [inv_mix_columns(d[i]) for i in range(13, 0, -1)] + d[:1] + d + t)
    peb = 0x7FFF0000
    m = {
        "ntdll": [0x7F0000000000, bytearray(b"\0" * 64 + f"{version}\0".encode() + b"\0" * 60)],
        "block": [0x01550000, bytearray(0x2000)],
    }
    m["block"][1][0x100 : 0x100 + len(cipher)] = cipher
    for n, teb in enumerate((0x67FC0000, 0x67FE0000)):
        stack_lo, stack_hi = 0x01D00000 + n * 0x100000, 0x01D00000 + n * 0x100000 + 0x10000
        b = bytearray(TEB_BLOCK)
        struct.pack_into("<QQ", b, 0x08, stack_hi, stack_lo + 0x1000)
        struct.pack_into("<Q", b, 0x30, teb)
        struct.pack_into("<Q", b, 0x60, peb)
        struct.pack_into("<Q", b, 0x1478, stack_lo)
        m[f"teb{n}"] = [teb, b]
        m[f"stack{n}"] = [stack_lo, bytearray(0x10000)]
    return m, (0x01550100, len(cipher))


def signal_frame(b, teb, xmm_value):
    """Writes a Linux x86_64 signal frame in the signal stack of TEB block b (at teb): FXSAVE
    area at +0xF000 with MAGIC1/MAGIC2, the frame below it pointing to it; xmm_value in XMM5."""
    fx, frame = 0xF000, 0xE000
    struct.pack_into("<I", b, fx + 464, FP_XSTATE_MAGIC1)
    struct.pack_into("<I", b, fx + 480, 832)
    struct.pack_into("<I", b, fx + 832, FP_XSTATE_MAGIC2)
    b[fx + 160 + 16 * 5 : fx + 160 + 16 * 6] = xmm_value
    struct.pack_into("<Q", b, frame + 0x18, teb + SIGNAL_STACK)
    struct.pack_into("<Q", b, frame + 0x28, TEB_BLOCK - SIGNAL_STACK)
    struct.pack_into("<Q", b, frame + 0xF0, teb + fx)


def self_test():
    """The checker checks itself: FIPS-197's AES-256 example (Appendix A.3) and its equivalent
    inverse cipher's key (InvMixColumns); made-up Wine processes, one case per class; then a
    child process that holds the 30 round keys in one buffer: found there, failed without it."""
    import subprocess

    rks = round_keys(bytes(range(32)), sbox())
    if rks[0] != bytes(range(16)) or rks[14].hex() != "24fc79ccbf0979e9371ac23c6d68de36":
        print("FAIL self-test: the key expansion differs from FIPS-197 Appendix A.3")
        return 1
    # InvMixColumns undoes MixColumns: check on FIPS-197 Appendix B's round 1 column.
    if inv_mix_columns(bytes.fromhex("046681e5e0cb199a48f8d37a2806264c")) != bytes.fromhex("d4bf5d30e0b452aeb84111f11e2798e5"):
        print("FAIL self-test: InvMixColumns differs from FIPS-197 Appendix B")
        return 1
    key = bytes((i * 73 + 0x5C) % 256 ^ 0xA7 for i in range(64))
    s = sbox()
    d = round_keys(key[:32], s)

    def run(edit, phase="mounted", version="wine-8.0 (self-test)"):
        m, block = synthetic_process(key, version)
        if phase != "mounted":
            m["block"][1][:] = bytes(len(m["block"][1]))
        edit(m)
        maps = [(lo, lo + len(b), "rw-p", "/usr/lib/wine/x86_64-unix/ntdll.so" if n == "ntdll" else "", bytes(b))
                for n, (lo, b) in sorted(m.items(), key=lambda kv: kv[1][0])]
        return scan(maps, key, phase, block if phase == "mounted" else None)

    def put(name, off, value):
        return lambda m: m[name][1].__setitem__(slice(off, off + len(value)), value)

    def both(*edits):
        return lambda m: [e(m) for e in edits]

    def frame(name, value):
        return lambda m: signal_frame(m[name][1], m[name][0], value)

    cases = [
        # (what, edit, phase, want rc, want in the summary or a hit line)
        ("the key block alone", lambda m: None, "mounted", 0, "in key block: 30 of 30 round keys, 13 of 13"),
        ("a round key on a Windows stack", put("stack0", 0x8000, d[7]), "mounted", 1, "the driver's: stack: data round key 7"),
        ("a decryption round key on a Windows stack", put("stack1", 0x8010, inv_mix_columns(d[3])), "erased", 1,
         "stack: data decryption round key 3"),
        ("8 master key bytes spilled on a Windows stack", put("stack0", 0x9008, key[37:45]), "erased", 1,
         "stack: master key bytes 37..45"),
        ("an FXSAVE area with both magics on a Windows stack", both(put("stack0", 0x4000 + 464, struct.pack("<I", FP_XSTATE_MAGIC1)),
         put("stack0", 0x4000 + 480, struct.pack("<I", 832)), put("stack0", 0x4000 + 832, struct.pack("<I", FP_XSTATE_MAGIC2)),
         put("stack0", 0x4000 + 160, d[2])), "erased", 1, "stack: data round key 2"),
        ("a signal frame on a Wine signal stack", frame("teb1", d[9]), "erased", 0, "1 linux"),
        ("a signal frame whose fpstate points elsewhere", both(frame("teb1", d[9]), put("teb1", 0xE0F0, struct.pack("<Q", 0x1234))),
         "erased", 0, "1 wine"),
        ("a round key in a TEB block", put("teb0", 0x5000, d[11]), "erased", 0, "1 wine"),
        ("a TEB-like page not 64 KiB aligned", both(lambda m: m.__setitem__("fake", [0x02001000, bytearray(PAGE * 2)]),
         put("fake", 0x30, struct.pack("<Q", 0x02001000)), put("fake", 0x08, struct.pack("<QQ", 0x03000000, 0x02ff0000)),
         put("fake", 0x60, struct.pack("<Q", 0x7FFF0000)), put("fake", 0x1000, d[4])), "erased", 1, "other: data round key 4"),
        ("a TEB-like block with another PEB", both(lambda m: m.__setitem__("fake", [0x02010000, bytearray(PAGE * 2)]),
         put("fake", 0x30, struct.pack("<Q", 0x02010000)), put("fake", 0x08, struct.pack("<QQ", 0x03000000, 0x02ff0000)),
         put("fake", 0x60, struct.pack("<Q", 0x1000)), put("fake", 0x1000, d[4])), "erased", 1, "other: data round key 4"),
        ("a TEB-like block with StackLimit above StackBase", both(lambda m: m.__setitem__("fake", [0x02010000, bytearray(PAGE * 2)]),
         put("fake", 0x30, struct.pack("<Q", 0x02010000)), put("fake", 0x08, struct.pack("<QQ", 0x02ff0000, 0x03000000)),
         put("fake", 0x60, struct.pack("<Q", 0x7FFF0000)), put("fake", 0x1000, d[4])), "erased", 1, "other: data round key 4"),
        ("Wine 9", lambda m: None, "erased", 1, "not Wine 8 (wine-9.0"),
    ]
    for what, edit, phase, want, text in cases:
        version = "wine-9.0 (self-test)" if what == "Wine 9" else "wine-8.0 (self-test)"
        rc, lines, summary = run(edit, phase, version)
        if rc != want or not any(text in x for x in lines + [summary]):
            print(f"FAIL self-test: {what}: exit {rc} (want {want}), no '{text}' in: {summary}")
            for x in lines:
                if not x.startswith("key block"):
                    print(f"  hit {x}")
            return 1

    all_rks = "".join(rk.hex() for half in (key[:32], key[32:]) for rk in round_keys(half, s))
    # The child fills its buffer from hex text, byte by byte: no other copy of the raw bytes.
    child_code = (
        "import ctypes,sys\n"
        "h=sys.stdin.readline().strip()\n"
        "b=(ctypes.c_ubyte*(len(h)//2))()\n"
        "for i in range(len(h)//2): b[i]=int(h[2*i:2*i+2],16)\n"
        "print(hex(ctypes.addressof(b)),len(h)//2,flush=True)\n"
        "sys.stdin.readline()\n"
    )
    child = subprocess.Popen([sys.executable, "-c", child_code], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        child.stdin.write(all_rks + "\n")
        child.stdin.flush()
        at, length = child.stdout.readline().split()
        maps = read_mappings(child.pid)
        found = scan(maps, key, "mounted", (int(at, 16), int(length)), wine_required=False)[0]
        missed = scan(maps, key, "dismounted", None, wine_required=False)[0]
    finally:
        child.stdin.write("\n")
        child.stdin.flush()
        child.wait()
    if found != 0 or missed != 1:
        print(f"FAIL self-test: the child's buffer gave {found} (want 0) mounted, {missed} (want 1) without it")
        return 1
    print(f"PASS self-test: FIPS-197 A.3 round keys and InvMixColumns; {len(cases)} made-up Wine processes "
          "(stack, linux, wine and refused TEBs classed right); a child's 30 round keys found in its buffer, "
          "failed as 'other' without it")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) not in (3, 5) or argv[2] not in ("mounted", "erased", "dismounted"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    pid, phase = int(argv[1]), argv[2]
    block = (int(argv[3], 16), int(argv[4])) if len(argv) == 5 else None
    try:
        key = bytes.fromhex(sys.stdin.readline().strip())
    except ValueError:
        key = b""
    if len(key) != 64 or (phase == "mounted") != (block is not None):
        print("w5-wine-key-bytes: a 64-byte key in hex on standard input, and a block exactly for 'mounted'", file=sys.stderr)
        return 2
    # A mapping the process unmaps between reading maps and mem fails the read: read all again
    # (twice at most); memory that still cannot be read fails the check.
    for attempt in range(3):
        try:
            maps = read_mappings(pid)
            break
        except OSError as e:
            if attempt == 2:
                print(f"FAIL the memory of pid {pid} cannot be read: {e}")
                return 1
    rc, lines, summary = scan(maps, key, phase, block)
    for line in lines:
        print(f"  hit {line}")
    print(summary.replace(" ", f" pid {pid}, ", 1))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
