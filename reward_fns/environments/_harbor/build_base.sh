#!/usr/bin/env bash
# The Harbor tasks' base image without Docker: a minimal Debian (debootstrap --variant=minbase) with python3
# and pytest, committed with buildah (vfs storage, no daemon) as localhost/rewardfleet/harbor-base:bookworm and
# exported as an OCI layout. Cached under CACHE (default $REWARDFLEET_IMAGE_CACHE/harbor, that variable's default
# /var/cache/rewardfleet), which also holds buildah's storage:
# the key names the suite, the packages and the recipe's version (bump RECIPE when the steps below change), so a
# second run only checks that the image is still in buildah's storage.
#
#   build_base.sh [CACHE]            # prints the OCI layout's path; ~1 min the first time
#
# Needs root, debootstrap and buildah (Debian: apt-get install debootstrap buildah).
set -euo pipefail

SUITE=bookworm
PACKAGES=python3,python3-pytest
NAME=localhost/rewardfleet/harbor-base:$SUITE
CACHE=${1:-${REWARDFLEET_IMAGE_CACHE:-/var/cache/rewardfleet}/harbor}
STORAGE=(--root "$CACHE/buildah" --runroot "$CACHE/buildah-run" --storage-driver vfs)
RECIPE=1
KEY=$(echo "$SUITE $PACKAGES $RECIPE" | sha256sum | cut -c1-16)
BASE=$CACHE/base-$KEY

# The mirror apt uses on this host (deb822 URIs or a one-line entry), so debootstrap goes where apt may go.
mirror() {
  local uri
  uri=$(grep -hoE '^(URIs:|deb)\s+(\[[^]]*\]\s+)?http\S+' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list \
    2>/dev/null | grep -v security | grep -oE 'http\S+' | head -n1 || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

if [ ! -f "$BASE/oci/index.json" ]; then
  started=$(date +%s)
  rm -rf "$BASE.partial" && mkdir -p "$BASE.partial"
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$BASE.partial/rootfs" "$(mirror)" \
    >"$BASE.partial/debootstrap.log" 2>&1 || { tail -n 40 "$BASE.partial/debootstrap.log" >&2; exit 1; }
  root=$BASE.partial/rootfs
  # What an image does not need: package lists and caches, docs, man pages (a third of minbase's size).
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
  # Hosts that reach the package mirror through a TLS proxy trust its CA (here: /usr/local/share/ca-certificates);
  # the base trusts the same, so a task's `RUN apt-get`/`pip` works where the host's does.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates" "$root/etc/ssl/certs"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    cat /etc/ssl/certs/ca-certificates.crt >"$root/etc/ssl/certs/ca-certificates.crt"
  fi
  ln -sf python3 "$root/usr/bin/python"
  rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
  ctr=$(buildah "${STORAGE[@]}" from scratch)
  mnt=$(buildah "${STORAGE[@]}" mount "$ctr")
  cp -a "$root/." "$mnt/"
  buildah "${STORAGE[@]}" umount "$ctr" >/dev/null
  buildah "${STORAGE[@]}" config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --workingdir / --cmd bash "$ctr"
  buildah "${STORAGE[@]}" commit --quiet "$ctr" "$NAME" >/dev/null
  buildah "${STORAGE[@]}" rm "$ctr" >/dev/null
  buildah "${STORAGE[@]}" push --quiet "$NAME" "oci:$BASE.partial/oci:$SUITE" >/dev/null
  rm -rf "$root" "$BASE"
  mv "$BASE.partial" "$BASE"
  echo "built $NAME in $(($(date +%s) - started)) s" >&2
elif ! buildah "${STORAGE[@]}" inspect --type image "$NAME" >/dev/null 2>&1; then
  # buildah's storage was wiped but the export is there: load it back under its name.
  buildah "${STORAGE[@]}" tag "$(buildah "${STORAGE[@]}" pull --quiet "oci:$BASE/oci:$SUITE")" "$NAME"
fi
echo "$BASE/oci"
