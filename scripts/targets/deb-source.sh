#!/usr/bin/env bash
# Fetches a Debian source package into DEST (nothing to do when DEST exists):
# adds a deb-src line for bookworm main first, on the same mirror the
# machine's own "deb" entries use, when there is none yet.
# Usage: scripts/targets/deb-source.sh PACKAGE DEST
set -euo pipefail
[ $# = 2 ] || { echo "usage: deb-source.sh PACKAGE DEST" >&2; exit 2; }
package=$1 dest=$2
[ -d "$dest" ] && exit 0
fetch() {
  local tmp="$dest.fetch"
  rm -rf "$tmp" && mkdir -p "$tmp"
  (cd "$tmp" && apt-get source -qq "$package" >/dev/null)
  # apt-get source leaves the tarballs and one unpacked directory.
  mv "$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -1)" "$dest"
  rm -rf "$tmp"
}
if grep -rqs '^deb-src .*bookworm main' /etc/apt/sources.list /etc/apt/sources.list.d/ ||
   grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/; then
  fetch
  exit 0
fi
# Either file may be missing (deb822 .sources or the classic list): no match is not an error.
uri=$( { grep -h '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' || true
         grep -hE '^deb ' /etc/apt/sources.list 2>/dev/null |
           awk '{for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) {print $i; break}}' || true; } |
       grep -v security | head -1 || true)
if [ -z "$uri" ]; then
  echo "deb-source.sh: no Debian mirror found in /etc/apt; add a deb-src line for bookworm main" >&2
  exit 1
fi
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri bookworm main" \
  > /etc/apt/sources.list.d/vprof-deb-src.list
apt-get update -qq
fetch
