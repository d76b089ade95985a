# SPDX-License-Identifier: Apache-2.0
# Shared helpers for the hack/ scripts. Source it; it defines no state beyond
# ROOT (the repository root) and BIN (the cache of built tools).
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${ROOT}/bin"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# apt_install PKG... installs the Debian packages that are not installed yet.
# Calls from jobs running side by side (make setup's) take turns: apt
# refuses to run while another apt holds its locks.
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  {
    flock 9
    log "installing Debian packages: ${missing[*]}"
    if [ -z "${APT_UPDATED:-}" ]; then
      apt-get update -q >/dev/null
      export APT_UPDATED=1
    fi
    # With recommends, as the verified recipes install them (docker.io
    # wants cgroupfs-mount and xz-utils from its recommends).
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  } 9>/tmp/kvp-apt.lock
}

# debian_mirror prints the Debian mirror this machine's apt is configured with.
debian_mirror() {
  local uri=""
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '/^deb / && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
  fi
  [ -n "$uri" ] || die "no Debian mirror found in the apt sources"
  printf '%s\n' "$uri"
}

# hold_lock FILE WHAT takes an exclusive lock on FILE (made with its
# directory when missing) that the calling script holds until it exits.
# When another process holds it, it says it waits for WHAT, then waits.
# Each call opens FILE anew: a process that holds the lock and asks again
# waits for itself.
hold_lock() {
  local fd
  mkdir -p "$(dirname "$1")"
  exec {fd}>"$1"
  if ! flock -n "$fd"; then
    log "waiting for ${2}"
    flock "$fd"
  fi
}

# modules prints the directories of the workspace's modules, from go.work.
modules() {
  awk '/^use \(/ {inuse=1; next} inuse && /^\)/ {inuse=0} inuse {sub(/^\.\//, "", $1); print $1}' "${ROOT}/go.work"
}
