#!/bin/sh
# Writes the test volumes of this folder with VeraCrypt's console build (see README.md).
# Usage: VERACRYPT=/path/to/veracrypt ./make-volumes.sh   (run inside this folder)
# Only the volumes are committed; keyfile-a and keyfile-b are committed too and reused.
set -eu
VC=${VERACRYPT:-veracrypt}

# Options every volume shares: text mode, no questions, FAT written by VeraCrypt itself,
# randomness from the OS, file containers (512-byte sectors).
vc() {
    "$VC" --text --non-interactive --random-source=/dev/urandom "$@" > /dev/null
}

[ -f keyfile-a ] || head -c 64 /dev/urandom > keyfile-a
[ -f keyfile-b ] || head -c 1000 /dev/urandom > keyfile-b

rm -f ./*.hc

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

ls -l ./*.hc keyfile-a keyfile-b
