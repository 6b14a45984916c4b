#!/usr/bin/env sh
# Build the binaries to ship (Linux): each small, its line tables kept beside it.
#
#   packaging/release.sh [OUT]     (OUT: dist/ by default)
#
# OUT gets stepper, stepperd and stepperd-reap with no debug info in them, and
# OUT/.debug/<name>.debug with their line tables (zlib-compressed). Each binary names its
# file in a .gnu_debuglink section, which Rust's own backtraces, gdb and addr2line follow:
# installed together (the binaries in a folder, their .debug/ beside them), a panic's
# backtrace has files and lines; without .debug/ it still names its functions.
set -eu
cd "$(dirname "$0")/.."
out="${1:-dist}"
for tool in objcopy; do
  command -v "$tool" >/dev/null || { echo "release.sh needs $tool (binutils)" >&2; exit 1; }
done
cargo build --locked --profile dist -p stepperd -p stepper-cli --bins
mkdir -p "$out/.debug"
for bin in stepper stepperd stepperd-reap; do
  cp "target/dist/$bin" "$out/$bin"
  objcopy --only-keep-debug --compress-debug-sections=zlib "$out/$bin" "$out/.debug/$bin.debug"
  objcopy --strip-debug --add-gnu-debuglink="$out/.debug/$bin.debug" "$out/$bin"
done
ls -l "$out" "$out/.debug"
