#!/bin/sh
# Writes the test volumes of this folder with VeraCrypt's console build (see README.md).
# Usage: VERACRYPT=/path/to/veracrypt ./make-volumes.sh [VOLUME.hc...]   (run inside this folder)
# With no argument every volume is written again; with names, only those are (a hidden host
# with its hidden volume), and every other volume keeps its bytes.
# keyfile-a and keyfile-b are committed too and reused. decoy-outer.hc also needs FUSE (root, or
# a user allowed to mount FUSE and loop devices), losetup and mtools.
set -eu
VC=${VERACRYPT:-veracrypt}

# Every volume this script writes, in the order it writes them.
VOLUMES="whirlpool-aes.hc blake2s-aes.hc streebog-aes.hc sha512-pim7-aes.hc
keyfiles-sha512-aes.hc hidden-host.hc serpent.hc aes-twofish.hc sha256-aes.hc sha512-aes.hc
hidden-2m-host.hc decoy-outer.hc twofish.hc camellia.hc kuznyechik.hc aes-twofish-serpent.hc
serpent-aes.hc serpent-twofish-aes.hc twofish-serpent.hc camellia-kuznyechik.hc
camellia-serpent.hc kuznyechik-aes.hc kuznyechik-serpent-camellia.hc kuznyechik-twofish.hc"
WANTED=${*:-$VOLUMES}

# Whether the word $1 is one of the words of $2.
is_in() {
    for word in $2; do
        [ "$word" = "$1" ] && return 0
    done
    return 1
}

for name in $WANTED; do
    is_in "$name" "$VOLUMES" || { echo "unknown volume: $name" >&2; exit 1; }
done

# Whether the volume file $1 is to be written in this run.
want() {
    is_in "$1" "$WANTED"
}

# Options every volume shares: text mode, no questions, FAT written by VeraCrypt itself,
# randomness from the OS, file containers (512-byte sectors). `vc --create FILE ...` does
# nothing when FILE is not to be written in this run.
vc() {
    want "$2" || return 0
    "$VC" --text --non-interactive --random-source=/dev/urandom "$@" > /dev/null
}

[ -f keyfile-a ] || head -c 64 /dev/urandom > keyfile-a
[ -f keyfile-b ] || head -c 1000 /dev/urandom > keyfile-b

for name in $WANTED; do
    rm -f "./$name"
done

vc --create whirlpool-aes.hc --volume-type=normal --size=300K --encryption=AES \
    --hash=whirlpool --filesystem=FAT --pim=0 --keyfiles= \
    --password='whirlpool volume password'

vc --create blake2s-aes.hc --volume-type=normal --size=300K --encryption=AES \
    --hash=blake2s --filesystem=FAT --pim=0 --keyfiles= \
    --password='blake2s volume password'

vc --create streebog-aes.hc --volume-type=normal --size=300K --encryption=AES \
    --hash=streebog --filesystem=FAT --pim=0 --keyfiles= \
    --password='streebog volume password'

vc --create sha512-pim7-aes.hc --volume-type=normal --size=300K --encryption=AES \
    --hash=sha512 --filesystem=FAT --pim=7 --keyfiles= \
    --password='sha512 pim volume password'

vc --create keyfiles-sha512-aes.hc --volume-type=normal --size=300K --encryption=AES \
    --hash=sha512 --filesystem=FAT --pim=0 --keyfiles=keyfile-a,keyfile-b \
    --password='keyfiles volume password'

# Outer volume first, then the hidden volume inside it with its own PRF and PIM.
vc --create hidden-host.hc --volume-type=normal --size=400K --encryption=AES \
    --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='outer volume password'
vc --create hidden-host.hc --volume-type=hidden --size=64K --encryption=AES \
    --hash=whirlpool --filesystem=FAT --pim=3 --keyfiles= \
    --password='hidden volume password'

# Ciphers vcctl names but does not serve.
vc --create serpent.hc --volume-type=normal --size=300K --encryption=Serpent \
    --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='serpent volume password'

vc --create aes-twofish.hc --volume-type=normal --size=300K --encryption=AES-Twofish \
    --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='aes twofish volume password'

# A SHA-256 volume, and a plain SHA-512 volume (PIM 0, no keyfile) for the tests that damage,
# truncate or read across a volume.
vc --create sha256-aes.hc --volume-type=normal --size=300K --encryption=AES \
    --hash=sha256 --filesystem=FAT --pim=0 --keyfiles= \
    --password='sha256 volume password'

vc --create sha512-aes.hc --volume-type=normal --size=300K --encryption=AES \
    --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='sha512 volume password'

# A hidden volume of exactly 2 MiB, VeraCrypt's threshold: from this size on VeraCrypt keeps
# 128 KiB (not 4 KiB) of its footprint out of the hidden data area.
vc --create hidden-2m-host.hc --volume-type=normal --size=2560K --encryption=AES \
    --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='large outer volume password'
vc --create hidden-2m-host.hc --volume-type=hidden --size=2M --encryption=AES \
    --hash=sha256 --filesystem=FAT --pim=0 --keyfiles= \
    --password='large hidden volume password'

# An outer volume with files in it, for the largest hidden volume after them. VeraCrypt mounts
# it without a file system and without the kernel's crypto (FUSE): the decrypted volume is the
# file behind the loop device it attaches, and mtools writes the FAT there. The files are
# numbered lines, "NAME line 000001" to "NAME line 020000", cut to the file's size.
vc --create decoy-outer.hc --volume-type=normal --size=4M --encryption=AES \
    --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='decoy outer volume password'
if want decoy-outer.hc; then
    files=$(mktemp -d)
    seq -f 'REPORT.TXT line %06g' 1 20000 | head -c 102400 > "$files/REPORT.TXT"
    seq -f 'PHOTOS.DAT line %06g' 1 20000 | head -c 307200 > "$files/PHOTOS.DAT"
    seq -f 'NOTE.TXT line %06g' 1 20000 | head -c 1000 > "$files/NOTE.TXT"
    "$VC" --text --non-interactive --mount decoy-outer.hc --filesystem=none \
        --mount-options=nokernelcrypto --protect-hidden=no --pim=0 --keyfiles= \
        --password='decoy outer volume password'
    # `--list VOLUME` prints "SLOT: VOLUME DEVICE MOUNT-POINT".
    device=$("$VC" --text --list decoy-outer.hc | cut -d' ' -f3)
    image=$(losetup -n -O BACK-FILE "$device")
    MTOOLS_SKIP_CHECK=1 mcopy -i "$image" "$files/REPORT.TXT" "$files/PHOTOS.DAT" \
        "$files/NOTE.TXT" ::
    MTOOLS_SKIP_CHECK=1 mdir -i "$image" ::
    "$VC" --text --non-interactive --dismount decoy-outer.hc
    rm -r "$files"
fi

# The remaining ciphers and cascades, one volume each, named as VeraCrypt's `--encryption` names
# them (a cascade's first name is the cipher applied last when encrypting, the outermost).
vc --create twofish.hc --volume-type=normal --size=300K \
    --encryption=Twofish --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='twofish volume password'

vc --create camellia.hc --volume-type=normal --size=300K \
    --encryption=Camellia --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='camellia volume password'

vc --create kuznyechik.hc --volume-type=normal --size=300K \
    --encryption=Kuznyechik --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='kuznyechik volume password'

vc --create aes-twofish-serpent.hc --volume-type=normal --size=300K \
    --encryption=AES-Twofish-Serpent --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='aes twofish serpent volume password'

vc --create serpent-aes.hc --volume-type=normal --size=300K \
    --encryption=Serpent-AES --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='serpent aes volume password'

vc --create serpent-twofish-aes.hc --volume-type=normal --size=300K \
    --encryption=Serpent-Twofish-AES --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='serpent twofish aes volume password'

vc --create twofish-serpent.hc --volume-type=normal --size=300K \
    --encryption=Twofish-Serpent --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='twofish serpent volume password'

vc --create camellia-kuznyechik.hc --volume-type=normal --size=300K \
    --encryption=Camellia-Kuznyechik --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='camellia kuznyechik volume password'

vc --create camellia-serpent.hc --volume-type=normal --size=300K \
    --encryption=Camellia-Serpent --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='camellia serpent volume password'

vc --create kuznyechik-aes.hc --volume-type=normal --size=300K \
    --encryption=Kuznyechik-AES --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='kuznyechik aes volume password'

vc --create kuznyechik-serpent-camellia.hc --volume-type=normal --size=300K \
    --encryption=Kuznyechik-Serpent-Camellia --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='kuznyechik serpent camellia volume password'

vc --create kuznyechik-twofish.hc --volume-type=normal --size=300K \
    --encryption=Kuznyechik-Twofish --hash=sha512 --filesystem=FAT --pim=0 --keyfiles= \
    --password='kuznyechik twofish volume password'

for name in $WANTED; do
    ls -l "./$name"
done
ls -l keyfile-a keyfile-b
