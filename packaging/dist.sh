#!/usr/bin/env bash
# Build what a user installs without a Rust toolchain, into target/dist/:
#
#   packaging/dist.sh [TARGET]     (TARGET: a Rust target triple, this machine's by default)
#
#   stepper-VERSION-TARGET.tar.gz        bin/ (stepper, stepperd, stepperd-reap: no debug
#                                        info), share/ (man pages; bash, zsh and fish
#                                        completions; the systemd and launchd templates),
#                                        README.md, the licenses, install.sh
#   stepper-VERSION-TARGET-debug.tar.gz  bin/.debug/<name>.debug: the binaries' line tables,
#                                        found by backtraces and gdb when unpacked beside them
#   stepper_VERSION-1_ARCH.deb           /usr/bin, completions and man pages in their
#   stepper-VERSION-1.ARCH.rpm           system places, the user units in /usr/lib/systemd/user
#   SHA256SUMS                           every archive and package in target/dist/
#
# One build (the dist profile, `--locked`, through release.sh) feeds all of them. The
# packages need cargo-deb and cargo-generate-rpm (`cargo install --locked cargo-deb
# cargo-generate-rpm`); without them only the archives are made, and the script says so.
# SOURCE_DATE_EPOCH (the commit's time by default) dates the build and every file in the
# archives, so the same commit and toolchain give the same archives (checked: a second build
# of a commit gave the same bytes for every artifact). The C dependencies' build scripts
# watch SOURCE_DATE_EPOCH, so the first run after a new commit rebuilds them and what uses them.
set -euo pipefail
cd "$(dirname "$0")/.."
host=$(rustc -vV | sed -n 's/^host: //p')
target="${1:-$host}"
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)
dist=target/dist

case "$target" in
  *-linux-gnu | *-linux-musl) ;;
  *)
    echo "dist.sh: $target is not supported: the archives and packages are made for Linux targets (see README, Install)" >&2
    exit 1
    ;;
esac
if ! rustup target list --installed 2>/dev/null | grep -qx "$target" && [ "$target" != "$host" ]; then
  echo "dist.sh: the Rust standard library for $target is not installed — 'rustup target add $target' (needs the network), then run again" >&2
  exit 1
fi

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

# The binaries, stripped, with their line tables beside them.
stage="$dist/stage"
rm -rf "$stage"
mkdir -p "$stage"
packaging/release.sh "$stage/bin" "$target" >/dev/null

# Man pages and completions come from a stepper that runs here: the one just built, or the
# host's when cross-building (they are the same for every target).
gen="$stage/bin/stepper"
if [ "$target" != "$host" ]; then
  cargo build --locked --profile dist -p stepper-cli --bin stepper
  gen=target/dist/stepper
fi
share="$stage/share"
mkdir -p "$share/man/man1" "$share/bash-completion/completions" "$share/zsh/site-functions" \
  "$share/fish/vendor_completions.d" "$share/stepper/systemd" "$share/stepper/launchd" "$share/doc/stepper"
"$gen" man --dir "$share/man/man1" >/dev/null
gzip -9 -n "$share"/man/man1/*.1
"$gen" completions bash >"$share/bash-completion/completions/stepper"
"$gen" completions zsh >"$share/zsh/site-functions/_stepper"
"$gen" completions fish >"$share/fish/vendor_completions.d/stepper.fish"
# The service templates `stepper daemon install` renders ({{STEPPERD}}: stepperd's path).
cp packaging/systemd/stepperd.socket packaging/systemd/stepperd.service "$share/stepper/systemd/"
cp packaging/launchd/dev.stepper.stepperd.plist "$share/stepper/launchd/"
cp README.md LICENSE-MIT LICENSE-APACHE "$share/doc/stepper/"
# The packages' user units, rendered for /usr/bin/stepperd.
mkdir -p "$stage/lib/systemd/user"
for unit in stepperd.socket stepperd.service; do
  sed 's|{{STEPPERD}}|/usr/bin/stepperd|' "packaging/systemd/$unit" >"$stage/lib/systemd/user/$unit"
done

# The archives: a folder named after them, holding a prefix (bin/, share/), install.sh and
# SHA256SUMS of its files (which install.sh checks); the -debug archive unpacks over it.
# Sorted, owned by root, every file dated SOURCE_DATE_EPOCH, gzip without a timestamp.
name="stepper-$version-$target"
tree="$dist/$name"
pack() {
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
    --mode=u+w,go-w -C "$dist" -cf - "$name" | gzip -9 -n >"$dist/$1"
  rm -rf "$tree"
}
rm -rf "$tree"
mkdir -p "$tree/bin"
cp "$stage"/bin/stepper "$stage"/bin/stepperd "$stage"/bin/stepperd-reap "$tree/bin/"
cp -r "$share" "$tree/share"
cp README.md LICENSE-MIT LICENSE-APACHE "$tree/"
cp packaging/install.sh "$tree/install.sh"
# (Not itself: the shell makes the file before find runs, and find may list it, empty.)
(cd "$tree" && find . -type f ! -path ./SHA256SUMS | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum >SHA256SUMS)
pack "$name.tar.gz"
mkdir -p "$tree/bin"
cp -r "$stage/bin/.debug" "$tree/bin/"
pack "$name-debug.tar.gz"

# The packages, from the same files (their lists are in client-cli/Cargo.toml). The tools
# come from PATH, or from STEPPER_DIST_TOOLS (a `cargo install --root` folder's bin/).
[ -n "${STEPPER_DIST_TOOLS:-}" ] && PATH="$STEPPER_DIST_TOOLS:$PATH"
if command -v cargo-deb >/dev/null; then
  # -q: it warns of every staged file that it is not in Cargo's target/release; none is meant to be.
  cargo deb -q -p stepper-cli --no-build --no-strip --no-dbgsym --target "$target" -o "$dist/" >/dev/null
else
  echo "dist.sh: no cargo-deb, so no .deb ('cargo install --locked cargo-deb')" >&2
fi
if command -v cargo-generate-rpm >/dev/null; then
  cargo generate-rpm -p client-cli --target "$target" -o "$dist/" >/dev/null
else
  echo "dist.sh: no cargo-generate-rpm, so no .rpm ('cargo install --locked cargo-generate-rpm')" >&2
fi

# The checksums of everything made so far (other targets' too), as `sha256sum -c` reads them.
(cd "$dist" && find . -maxdepth 1 -type f \( -name '*.tar.gz' -o -name '*.deb' -o -name '*.rpm' \) \
  -printf '%f\n' | LC_ALL=C sort | xargs -r sha256sum >SHA256SUMS)
(cd "$dist" && ls -l $(cut -d' ' -f3 SHA256SUMS) SHA256SUMS)
