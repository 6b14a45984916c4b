#!/usr/bin/env sh
# Build the binaries to ship (Linux): each small, its line tables kept beside it.
#
#   packaging/release.sh [OUT] [TARGET]     (OUT: dist/ by default; TARGET: this machine's)
#
# OUT gets stepper, stepperd and stepperd-reap with no debug info in them, and
# OUT/.debug/<name>.debug with their line tables (zlib-compressed). Each binary names its
# file in a .gnu_debuglink section, which Rust's own backtraces, gdb and addr2line follow:
# installed together (the binaries in a folder, their .debug/ beside them), a panic's
# backtrace has files and lines; without .debug/ it still names its functions.
#
# Why: line tables were four fifths of the binaries (stepperd 181 MB, 45 MB without them).
# [profile.release] strips debug info but keeps the symbol table (backtraces name
# functions); this builds the `dist` profile (with line tables) and splits each binary with
# objcopy. `split-debuginfo = "packed"` was not enough on Linux: split DWARF leaves the line
# tables (and the precompiled std's debug info) in the executable.
#
# TARGET (a Rust target triple) cross-builds: its standard library must be installed
# (rustup target add TARGET), with a linker for it (CARGO_TARGET_<TRIPLE>_LINKER) and an
# objcopy that reads its binaries (OBJCOPY, e.g. aarch64-linux-gnu-objcopy).
set -eu
cd "$(dirname "$0")/.."
out="${1:-dist}"
host=$(rustc -vV | sed -n 's/^host: //p')
target="${2:-$host}"
objcopy="${OBJCOPY:-objcopy}"
command -v "$objcopy" >/dev/null || { echo "release.sh needs $objcopy (binutils)" >&2; exit 1; }
# Reproducible where the toolchain allows: no path of this machine in the binaries (panic
# messages name /stepper/… and /cargo/… instead); SOURCE_DATE_EPOCH dates the build.
RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$PWD=/stepper --remap-path-prefix=${CARGO_HOME:-$HOME/.cargo}=/cargo"
export RUSTFLAGS
if [ "$target" = "$host" ]; then
  # The host's build goes where a plain `cargo build --profile dist` puts it.
  cargo build --locked --profile dist -p stepperd -p stepper-cli --bins
  built=target/dist
else
  cargo build --locked --profile dist --target "$target" -p stepperd -p stepper-cli --bins
  built="target/$target/dist"
fi
mkdir -p "$out/.debug"
for bin in stepper stepperd stepperd-reap; do
  cp "$built/$bin" "$out/$bin"
  "$objcopy" --only-keep-debug --compress-debug-sections=zlib "$out/$bin" "$out/.debug/$bin.debug"
  "$objcopy" --strip-debug --add-gnu-debuglink="$out/.debug/$bin.debug" "$out/$bin"
done
ls -l "$out" "$out/.debug"
