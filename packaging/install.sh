#!/usr/bin/env sh
# Install stepper from this source tree for the current user: both binaries into
# ~/.local/bin (or $PREFIX/bin), then the daemon as a login service.
set -eu
cd "$(dirname "$0")/.."
prefix="${PREFIX:-$HOME/.local}"
cargo install --locked --path daemon/stepperd --root "$prefix"
cargo install --locked --path client-cli --root "$prefix"
"$prefix/bin/stepper" daemon install
echo "installed: $prefix/bin/stepper, $prefix/bin/stepperd and $prefix/bin/stepperd-reap"
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) echo "add $prefix/bin to your PATH" ;;
esac
