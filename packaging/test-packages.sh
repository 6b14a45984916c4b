#!/usr/bin/env bash
# What packaging/dist.sh made for this machine, installed and used for real (as root, on a
# Debian-like machine; .ci/run calls it after the tests, and it runs by hand the same way):
#
#   packaging/test-packages.sh
#
# - SHA256SUMS holds for every artifact;
# - the .deb installs with dpkg: `stepper --version`, `man stepper`, a bash completion, the
#   daemon started through the packaged user units (socket activation, the way systemd
#   does it) and `stepper doctor` against it, `stepper daemon install` enabling the
#   packaged units and writing nothing, `systemctl --global enable`; then `dpkg --purge`
#   leaves no file, unit, enablement link or daemon behind;
# - the .rpm's file list (`rpm -qlp`) is the .deb's, with the zsh completion where Fedora
#   reads it and the licenses where RPM keeps them;
# - the archive installs with its install.sh on a PATH without cargo, refuses a damaged
#   file, and `stepper daemon install`/`uninstall` leave no unit behind.
#
# Pipes into grep let grep read everything (no -q): under pipefail, a writer cut off early
# would fail the line. Needs dpkg, rpm (apt-get install rpm), man (apt-get install man-db) and systemd's
# systemd-socket-activate and systemctl.
set -euo pipefail
cd "$(dirname "$0")/.."
dist=target/dist
host=$(rustc -vV | sed -n 's/^host: //p')
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)

fail() {
  echo "test-packages: FAILED: $*" >&2
  exit 1
}
step() { echo "-- $*"; }
[ "$(id -u)" = 0 ] || fail "run as root: it installs the .deb with dpkg"
for tool in dpkg rpm man systemd-socket-activate systemctl readelf; do
  command -v "$tool" >/dev/null || fail "needs $tool"
done
dpkg -s stepper >/dev/null 2>&1 && fail "a stepper package is installed already: remove it first (dpkg --purge stepper)"

deb=$(find "$dist" -maxdepth 1 -name "stepper_${version}-1_*.deb" | head -n1)
rpm=$(find "$dist" -maxdepth 1 -name "stepper-${version}-1.*.rpm" | head -n1)
archive="$dist/stepper-$version-$host.tar.gz"
[ -f "$deb" ] && [ -f "$rpm" ] && [ -f "$archive" ] || fail "no .deb, .rpm or $archive in $dist: run packaging/dist.sh first"

# A user of our own: a home and a runtime folder (what a login gives), nothing inherited.
work=$(mktemp -d /tmp/stepper-pkg.XXXXXX)
activator=""
cleanup() {
  [ -n "$activator" ] && kill "$activator" 2>/dev/null || true
  dpkg -s stepper >/dev/null 2>&1 && dpkg --purge stepper >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/home" && mkdir -m 700 "$work/run"
user_env=(HOME="$work/home" XDG_RUNTIME_DIR="$work/run" USER=root LANG=C.UTF-8
  STEPPER_LOGIN_ENV=off OLLAMA_BASE_URL=http://127.0.0.1:9/v1)
as_user() { env -i PATH="$PATH" "${user_env[@]}" "$@"; }
wait_for() { # DESCRIPTION COMMAND...: poll for up to 20 s
  local what=$1 i
  shift
  for i in $(seq 200); do
    "$@" && return 0
    sleep 0.1
  done
  fail "timed out waiting for $what"
}

step "SHA256SUMS"
(cd "$dist" && sha256sum -c --quiet SHA256SUMS) || fail "an artifact does not match SHA256SUMS"
grep -q " stepper-$version-$host.tar.gz\$" "$dist/SHA256SUMS" || fail "SHA256SUMS does not list the archive"

step "dpkg -i $deb"
# Man pages are installed even where the image's dpkg configuration leaves them out.
dpkg -i --path-include='/usr/share/man/man1/stepper*' "$deb" >/dev/null
mapfile -t packaged < <(dpkg -L stepper | while read -r f; do [ -d "$f" ] || echo "$f"; done)
expected=(/usr/bin/stepper /usr/bin/stepperd /usr/bin/stepperd-reap
  /usr/lib/systemd/user/stepperd.socket /usr/lib/systemd/user/stepperd.service
  /usr/share/man/man1/stepper.1.gz /usr/share/man/man1/stepper-daemon-install.1.gz
  /usr/share/bash-completion/completions/stepper /usr/share/zsh/vendor-completions/_stepper
  /usr/share/fish/vendor_completions.d/stepper.fish /usr/share/doc/stepper/copyright)
for f in "${expected[@]}"; do
  printf '%s\n' "${packaged[@]}" | grep -x "$f" >/dev/null || fail "the .deb has no $f"
  [ -f "$f" ] || fail "$f is not installed"
done
for bin in stepper stepperd stepperd-reap; do
  readelf -S "/usr/bin/$bin" | grep '\.debug_info' >/dev/null && fail "/usr/bin/$bin carries debug info"
done

step "stepper --version"
said=$(as_user stepper --version)
[[ $said =~ ^stepper\ $version\ \([0-9a-f]{12},\ built\ [0-9]{4}-[0-9]{2}-[0-9]{2}\)$ ]] ||
  fail "stepper --version said '$said': the version, the commit and the build date expected"
echo "$said"

step "man stepper"
page=$(MANPAGER=cat MANWIDTH=80 man stepper 2>/dev/null) || fail "man stepper found no page"
grep -q "stepper daemon" <<<"$page" || grep -q "stepper-daemon" <<<"$page" || fail "man stepper: no daemon command in the page"

step "bash completion"
words=$(bash -c 'source /usr/share/bash-completion/completions/stepper
  COMP_WORDS=(stepper dae); COMP_CWORD=1; COMP_LINE="stepper dae"; COMP_POINT=11
  _stepper stepper dae stepper; echo "${COMPREPLY[*]}"')
[[ " $words " == *" daemon "* ]] || fail "completing 'stepper dae' gave '$words'"

step "the daemon through the packaged user units (socket activation)"
unit=/usr/lib/systemd/user
execstart=$(sed -n 's/^ExecStart=//p' "$unit/stepperd.service")
listen=$(sed -n 's/^ListenStream=//p' "$unit/stepperd.socket")
[ "$execstart" = /usr/bin/stepperd ] || fail "the packaged service starts '$execstart'"
socket=${listen//%t/$work/run}
mkdir -m 700 -p "$(dirname "$socket")"
# env execs the activator, which execs the daemon: one process, whose pid the daemon reports.
env -i PATH="$PATH" "${user_env[@]}" systemd-socket-activate -l "$socket" -E HOME \
  -E XDG_RUNTIME_DIR -E STEPPER_LOGIN_ENV -E OLLAMA_BASE_URL "$execstart" >"$work/activate.log" 2>&1 &
activator=$!
wait_for "the socket" test -S "$socket"
status=$(as_user stepper daemon status --json) || fail "stepper daemon status: $status"
grep -Eq "\"pid\": ?$activator([^0-9]|\$)" <<<"$status" || fail "the daemon is not the activated process: $status"
doctor=$(as_user stepper doctor || true)
grep -q "✓ stepperd $version is running (pid $activator)" <<<"$doctor" || fail "stepper doctor: $doctor"

as_user stepper daemon stop >/dev/null
wait_for "the daemon to exit" bash -c "! kill -0 $activator 2>/dev/null"
wait "$activator" || fail "the daemon did not exit cleanly: $(cat "$work/activate.log")"
activator=""
rm -f "$socket" # the service manager's to remove (RemoveOnStop=yes)

step "stepper daemon install enables the packaged units and writes nothing"
said=$(as_user STEPPER_NO_SERVICE_MANAGER=1 stepper daemon install)
grep -q "enabled the package's units in $unit" <<<"$said" || fail "daemon install said: $said"
[ -z "$(ls -A "$work/home/.config/systemd/user" 2>/dev/null)" ] || fail "daemon install wrote units for the user"
systemctl --global enable stepperd.socket >/dev/null 2>&1
[ -L /etc/systemd/user/sockets.target.wants/stepperd.socket ] || fail "systemctl --global enable linked nothing"
said=$(as_user stepper daemon status || true)
grep -q "installed as a systemd (user) service" <<<"$said" || fail "daemon status does not see the global enablement: $said"
grep -q "installed with systemd (user)" <<<"$(as_user stepper doctor || true)" || fail "doctor does not see the global enablement"
as_user stepper daemon stop >/dev/null # the one doctor started

step "dpkg --purge"
dpkg --purge stepper >/dev/null
dpkg -s stepper >/dev/null 2>&1 && fail "the package is still installed"
for f in "${packaged[@]}"; do
  [ -e "$f" ] && fail "$f is left after dpkg --purge"
done
[ -e /etc/systemd/user/sockets.target.wants/stepperd.socket ] && fail "the global enablement link is left"
[ -L /etc/systemd/user/sockets.target.wants/stepperd.socket ] && fail "a dangling enablement link is left"
for pid in $(pgrep -x stepperd || true); do
  case "$(readlink "/proc/$pid/exe")" in /usr/bin/stepperd*) fail "the packaged stepperd still runs (pid $pid)" ;; esac
done

step "rpm -qlp $rpm"
mapfile -t rpm_files < <(rpm -qlp "$rpm" 2>/dev/null)
want=()
for f in "${packaged[@]}"; do
  case "$f" in
    /usr/share/doc/stepper/copyright | /usr/share/doc/stepper/changelog*) ;;
    /usr/share/zsh/vendor-completions/_stepper) want+=(/usr/share/zsh/site-functions/_stepper) ;;
    *) want+=("$f") ;;
  esac
done
want+=(/usr/share/licenses/stepper/LICENSE-MIT /usr/share/licenses/stepper/LICENSE-APACHE)
diff <(printf '%s\n' "${want[@]}" | sort) <(printf '%s\n' "${rpm_files[@]}" | sort) ||
  fail "the .rpm's files (>) differ from the .deb's (<)"
rpm -qp --scripts "$rpm" 2>/dev/null | grep "systemctl --global disable stepperd.socket" >/dev/null ||
  fail "the .rpm does not disable the units on removal"

step "the archive's install.sh, without cargo"
nocargo=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  [ -x "$d/cargo" ] || [ -x "$d/rustc" ] || nocargo="$nocargo${nocargo:+:}$d"
done
PATH=$nocargo command -v cargo >/dev/null && fail "cargo is still on the PATH"
mkdir "$work/download"
cp "$archive" "$dist/SHA256SUMS" "$work/download/"
tar -xzf "$work/download/${archive##*/}" -C "$work/download"
folder="$work/download/stepper-$version-$host"
# Its list names every file but itself (a list with its own sum never checks).
grep -q ' SHA256SUMS$' "$folder/SHA256SUMS" && fail "the archive's SHA256SUMS lists itself"
prefix="$work/prefix"
out=$(PATH=$nocargo as_user STEPPER_NO_SERVICE_MANAGER=1 sh "$folder/install.sh" --prefix "$prefix" --service) ||
  fail "install.sh: $out"
grep -q "checked stepper-$version-$host.tar.gz against ../SHA256SUMS" <<<"$out" || fail "install.sh did not check the archive: $out"
for f in bin/stepper bin/stepperd bin/stepperd-reap share/man/man1/stepper.1.gz \
  share/bash-completion/completions/stepper share/zsh/site-functions/_stepper \
  share/fish/vendor_completions.d/stepper.fish; do
  [ -f "$prefix/$f" ] || fail "install.sh did not install $f"
done
PATH=$nocargo as_user "$prefix/bin/stepper" --version | grep "^stepper $version (" >/dev/null || fail "the installed stepper does not run"
units="$work/home/.config/systemd/user"
grep -qx "ExecStart=$prefix/bin/stepperd" "$units/stepperd.service" || fail "install.sh --service wrote no unit for $prefix/bin/stepperd"
PATH=$nocargo as_user STEPPER_NO_SERVICE_MANAGER=1 "$prefix/bin/stepper" daemon uninstall >/dev/null
[ -z "$(ls -A "$units")" ] || fail "daemon uninstall left $(ls -A "$units")"
# A damaged file is refused, before anything is copied.
echo >>"$folder/bin/stepperd"
if out=$(PATH=$nocargo as_user sh "$folder/install.sh" --prefix "$work/prefix2" 2>&1); then
  fail "install.sh installed a damaged archive: $out"
fi
grep -q "differ from its SHA256SUMS" <<<"$out" || fail "install.sh said: $out"
[ -e "$work/prefix2" ] && fail "install.sh copied files from a damaged archive"

echo "test-packages: all checks passed"
