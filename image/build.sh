#!/usr/bin/env bash
# `make image`: the project's Dockerfile built with podman from Debian's packages, on a base made
# by image/base.sh (no image registry is needed). Tags the image as the chart's default image
# (values.yaml image.repository, tag = Chart.yaml appVersion) unless IMAGE is set, and writes
# its size and Python packages to .cache/image/. Idempotent: a second run reuses the base and
# podman's layer cache.
set -euo pipefail
cd "$(dirname "$0")/.."

# Tools: Debian's podman, runc (crun refuses hybrid cgroup v1/v2 hosts) and mmdebstrap.
missing=()
for tool in podman:podman runc:runc mmdebstrap:mmdebstrap; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "image/build.sh: installing ${missing[*]} from Debian" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if ! podman info >/dev/null 2>&1; then
  echo "image/build.sh: podman does not work here:" >&2
  podman info >&2 || true
  exit 1
fi

app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' charts/dra-webhook/Chart.yaml)
repo=$(sed -n 's/^  repository: *\(.*\)$/\1/p' charts/dra-webhook/values.yaml | head -1)
IMAGE=${IMAGE:-$repo:$app_version}

base=$(image/base.sh)

# pip inside the build reaches PyPI as pip does here: this machine's pip.conf and the CA bundle
# it names, mounted read-only (nothing is copied into the image).
mounts=()
if [ -f /etc/pip.conf ]; then
  mounts+=(--volume /etc/pip.conf:/etc/pip.conf:ro)
  cert=$(sed -n 's/^ *cert *= *//p' /etc/pip.conf | head -1)
  [ -n "$cert" ] && [ -f "$cert" ] && mounts+=(--volume "$cert:$cert:ro")
fi
envs=()
for v in PIP_INDEX_URL PIP_EXTRA_INDEX_URL PIP_TRUSTED_HOST PIP_DEFAULT_TIMEOUT; do
  [ -n "${!v:-}" ] && envs+=(--env "$v=${!v}")
done

echo "image/build.sh: building $IMAGE on $base" >&2
podman build --quiet --network host --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
  "${mounts[@]}" "${envs[@]}" --build-arg "BASE=$base" --tag "$IMAGE" . >/dev/null

mkdir -p .cache/image
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
podman run --rm --runtime runc --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --network none \
  --entrypoint python "$IMAGE" -c \
  'import importlib.metadata as m; print("\n".join(sorted(f"{d.name}=={d.version}" for d in m.distributions())))' \
  > .cache/image/packages.txt
echo "$IMAGE" > .cache/image/name
echo "image/build.sh: $IMAGE: $((size / 1000000)) MB uncompressed, $(wc -l < .cache/image/packages.txt) Python packages (.cache/image/packages.txt)"
