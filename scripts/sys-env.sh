# The environment of every cross build of a kernel image on Linux (sys/, the Wine test disk);
# sourced, not run, after scripts/setup-sys-toolchain.sh. Needs ROOT (the repository).
#
# bindgen over mingw's headers: wdk-build passes -fms-compatibility, which hides __GNUC__ that
# mingw's headers need; clang's own include folder gives mmintrin.h; mingw-compat.h declares
# what mingw-w64 10 lacks.
BINDGEN_EXTRA_CLANG_ARGS="-fgnuc-version=4.2.1 -I$(clang -print-resource-dir)/include -include $ROOT/sys/mingw-compat.h"
export BINDGEN_EXTRA_CLANG_ARGS
# ARM64: no DDK header set on Linux has an ARM64 branch, so the aarch64 bindings are generated from
# the same headers configured as x64 (both LLP64; the layouts the glue uses are asserted against
# the ARM64 figures in driver/src/wdm/arm64-layouts.tsv, W14). bindgen reads this variable instead
# of the generic one for that target; it undoes the ARM64 defines wdk-build passes.
BINDGEN_EXTRA_CLANG_ARGS_aarch64_pc_windows_msvc="--target=x86_64-pc-windows-msvc -U_ARM64_ -UARM64 \
-U_USE_DECLSPECS_FOR_SAL -USTD_CALL -D_WIN64 -D_AMD64_ -DAMD64 $BINDGEN_EXTRA_CLANG_ARGS"
export BINDGEN_EXTRA_CLANG_ARGS_aarch64_pc_windows_msvc
# RUSTFLAGS would replace the target rustflags of sys/linux-cross.toml (+crt-static).
unset RUSTFLAGS

# keep_lock FILE: the Cargo.lock files of sys/ and the test disk are committed as Windows
# resolves them (wdk-build from crates.io); linux-cross.toml's [patch] rewrites that entry on
# every build. keep_lock saves FILE and puts it back when the shell exits.
keep_lock() {
    local saved
    saved="$(mktemp)"
    cp "$1" "$saved"
    # shellcheck disable=SC2064 # expand now: the paths are fixed
    trap "cp '$saved' '$1'; rm -f '$saved'" EXIT
}
