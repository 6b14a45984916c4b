#!/usr/bin/env sh
# Install stepper for the current user, into ~/.local (or --prefix DIR, or $PREFIX).
#
# From a release archive (this script beside bin/ and share/), no Rust toolchain needed:
#
#   ./install.sh [--prefix DIR] [--service]
#
# checks the archive against the SHA256SUMS downloaded beside it (when there) and every file
# against the archive's own SHA256SUMS, copies bin/ and share/ (man pages, completions) into
# the prefix, and with --service runs `stepper daemon install` (the daemon at login).
#
# From a source tree (packaging/install.sh): builds both binaries with cargo into the
# prefix, then runs `stepper daemon install`.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
prefix="${PREFIX:-$HOME/.local}"
service=no
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || { echo "install.sh: --prefix needs a folder" >&2; exit 2; }; prefix=$2; shift ;;
    --prefix=*) prefix=${1#--prefix=} ;;
    --service) service=yes ;;
    -h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (--prefix DIR, --service)" >&2; exit 2 ;;
  esac
  shift
done

done_message() {
  echo "installed: $prefix/bin/stepper, $prefix/bin/stepperd and $prefix/bin/stepperd-reap"
  case ":$PATH:" in
    *":$prefix/bin:"*) ;;
    *) echo "add $prefix/bin to your PATH" ;;
  esac
}

if ! [ -f "$here/bin/stepper" ]; then
  # A source tree.
  cd "$here/.."
  cargo install --locked --path daemon/stepperd --root "$prefix"
  cargo install --locked --path client-cli --root "$prefix"
  "$prefix/bin/stepper" daemon install
  done_message
  exit 0
fi

cd "$here"
if command -v sha256sum >/dev/null 2>&1; then
  sha256() { sha256sum "$@"; }
elif command -v shasum >/dev/null 2>&1; then
  sha256() { shasum -a 256 "$@"; }
else
  echo "install.sh: no sha256sum or shasum to check the files with" >&2
  exit 1
fi
# The archive as downloaded, when it and the release's SHA256SUMS lie beside this folder.
name=${here##*/}
if [ -f "../$name.tar.gz" ] && [ -f ../SHA256SUMS ]; then
  line=$(grep " [ *]\{0,1\}$name.tar.gz\$" ../SHA256SUMS || true)
  if [ -z "$line" ]; then
    echo "install.sh: ../SHA256SUMS has no line for $name.tar.gz — download the SHA256SUMS of the same release" >&2
    exit 1
  fi
  (cd .. && echo "$line" | sha256 -c - >/dev/null) || {
    echo "install.sh: $name.tar.gz does not match ../SHA256SUMS — download it again" >&2
    exit 1
  }
  echo "checked $name.tar.gz against ../SHA256SUMS"
fi
# Every file, as the archive was made.
sha256 -c --quiet SHA256SUMS || {
  echo "install.sh: files of $here differ from its SHA256SUMS (above) — unpack the archive again" >&2
  exit 1
}

mkdir -p "$prefix/bin" "$prefix/share"
for bin in stepper stepperd stepperd-reap; do
  # A new file, not one written over: a running stepperd keeps its own.
  rm -f "$prefix/bin/$bin"
  cp "bin/$bin" "$prefix/bin/$bin"
  chmod 755 "$prefix/bin/$bin"
done
# The line tables, when the -debug archive was unpacked over this one.
if [ -d bin/.debug ]; then
  mkdir -p "$prefix/bin/.debug"
  cp bin/.debug/*.debug "$prefix/bin/.debug/"
fi
cp -R share/. "$prefix/share/"
if [ "$service" = yes ]; then
  "$prefix/bin/stepper" daemon install
fi
done_message
echo "man pages: $prefix/share/man; completions: $prefix/share/{bash-completion/completions,zsh/site-functions,fish/vendor_completions.d}"
