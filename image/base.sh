#!/usr/bin/env bash
# The image's base, built from Debian 12's packages with mmdebstrap where python:3.11-slim cannot
# be pulled: what the Dockerfile needs of its BASE (Python 3.11 as `python` with venv and pip,
# groupadd/useradd) and nothing else. Prints the image name (localhost/dra-webhook-base:KEY).
#
# KEY is a hash of every input (suite, packages, options, image settings): the image is built once
# per KEY and kept in podman's store and as a tarball under .cache/image/, so a run with the same
# inputs takes seconds. Progress goes to stderr, mmdebstrap's output to .cache/image/base.log.
set -euo pipefail
cd "$(dirname "$0")/.."

SUITE=bookworm
# essential: Debian's Essential set without apt; python3-venv brings ensurepip's pip wheel (the
# Dockerfile's build stage makes its venv with it); python-is-python3 gives `python`; passwd
# gives groupadd/useradd; libstdc++6 is what the binary wheels (google-re2) link against.
PACKAGES=python3,python3-venv,python-is-python3,passwd,libstdc++6
OPTS=(
  --variant=essential --include="$PACKAGES"
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr   # merged /usr without the usrmerge package (and perl)
  --aptopt='Acquire::Check-Valid-Until "false"'
  # No documentation, translations, or glibc's iconv modules (Python's codecs do not use them).
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright' --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/lib/*/gconv/*'
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/log/*'
)
IMPORT=(--change 'ENV LANG=C.UTF-8' --change 'CMD ["python"]')
KEY=$(printf '%s\n' "$SUITE" "${OPTS[@]}" "${IMPORT[@]}" | sha256sum | cut -c1-16)
NAME=localhost/dra-webhook-base:$KEY
CACHE=.cache/image
TAR=$CACHE/base-$KEY.tar

if podman image exists "$NAME"; then
  echo "$NAME"
  exit 0
fi
mkdir -p "$CACHE"
if [ ! -s "$TAR" ]; then
  echo "image/base.sh: building $NAME with mmdebstrap (Debian $SUITE; a few minutes)" >&2
  rm -f "$CACHE"/base-*.tar "$TAR.part"
  if ! mmdebstrap --format=tar "${OPTS[@]}" "$SUITE" "$TAR.part" >"$CACHE/base.log" 2>&1; then
    tail -n 30 "$CACHE/base.log" >&2
    echo "image/base.sh: mmdebstrap failed; the whole log is $CACHE/base.log" >&2
    exit 1
  fi
  mv "$TAR.part" "$TAR"
fi
podman import --quiet "${IMPORT[@]}" "$TAR" "$NAME" >/dev/null
echo "$NAME"
