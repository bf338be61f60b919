#!/usr/bin/env bash
# Build and run the images with podman on a machine without Docker Hub or a Docker engine (this one).
# The Dockerfile stays the normal Docker one; everything that is particular to such a machine is here:
#
#   scripts/podman.sh setup     apt-get install podman (+ runc, debootstrap, podman-compose from PyPI)
#                               and the containers.conf this kernel needs
#   scripts/podman.sh base      a local python:3.11-slim stand-in, built with debootstrap (no registry)
#   scripts/podman.sh build     podman build the runtime image (TORCH_VARIANT=cuda|cpu, TAG=...)
#   scripts/podman.sh all       the three above
#
# CONTEXT_REV=HEAD builds the app code of that commit (git archive) with this checkout's Dockerfile and
# .dockerignore, so that work in progress elsewhere in the tree does not end up in the image.
#
# Why each step:
# - containers.conf: `default_ulimits = []` (this kernel refuses podman's default rlimits) and
#   runtime "runc" (crun needs a pure cgroup v2 hierarchy).
# - base: no registry can be pulled from, so `debootstrap --variant=minbase bookworm` (Debian's packages
#   are reachable) + python3, python3-venv, a `python` link, and this machine's CA bundle with PIP_CERT
#   pointing at it (pip inside the build goes through the same TLS-inspecting proxy as the host's).
#   The Dockerfile gets it through its PYTHON_IMAGE build argument.
# - build: --network host (the build's pip needs the host's network), --format docker (OCI images drop
#   HEALTHCHECK, and podman then never reports the container healthy).
set -euo pipefail
cd "$(dirname "$0")/.."

BASE_IMAGE=${BASE_IMAGE:-localhost/debian-python:3.11-bookworm}
TORCH_VARIANT=${TORCH_VARIANT:-cuda}
TAG=${TAG:-localhost/vit-digits:$TORCH_VARIANT}
TARGET=${TARGET:-runtime}
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
CONTAINERS_CONF=/etc/containers/containers.conf

log() { printf '[podman.sh %s] %s\n' "$(date +%T)" "$*" >&2; }

setup() {
  local need=()
  for cmd in podman runc debootstrap; do command -v "$cmd" >/dev/null || need+=("$cmd"); done
  if ((${#need[@]})); then
    log "apt-get install ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap >/dev/null
  fi
  if [[ ! -f $CONTAINERS_CONF ]]; then
    log "writing $CONTAINERS_CONF (default_ulimits = [], runtime = runc)"
    cat >"$CONTAINERS_CONF" <<'CONF'
# Written by vit-digits scripts/podman.sh: this kernel refuses podman's default rlimits, and crun needs
# a pure cgroup v2 hierarchy, which this machine does not have.
[containers]
default_ulimits = []

[engine]
runtime = "runc"
CONF
  elif ! grep -q '^default_ulimits *= *\[\]' "$CONTAINERS_CONF"; then
    log "warning: $CONTAINERS_CONF exists without 'default_ulimits = []' under [containers]; add it" \
      "(and runtime = \"runc\" under [engine]) if containers fail to start"
  fi
  # podman-compose (PyPI) drives the compose files; it goes into the project's venv.
  if [[ ! -x .venv/bin/podman-compose ]]; then
    log "pip install podman-compose"
    .venv/bin/python -m pip install -q 'podman-compose>=1.0.6'
  fi
}

base() {
  if podman image exists "$BASE_IMAGE"; then
    log "$BASE_IMAGE exists (podman rmi it to rebuild)"
    return
  fi
  local root
  root=$(mktemp -d /var/tmp/vit-digits-rootfs.XXXXXX)
  # debootstrap mounts /proc inside the tree while it runs: never remove across a mount point.
  trap 'mountpoint -q "$root/proc" && umount "$root/proc"; rm -rf --one-file-system "$root"' RETURN
  log "debootstrap bookworm into $root"
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    bookworm "$root" http://deb.debian.org/debian >/dev/null
  ln -sf python3 "$root/usr/bin/python"
  install -m 0644 "$CA_BUNDLE" "$root/etc/ssl/certs/build-ca-bundle.crt"
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
  log "podman import -> $BASE_IMAGE"
  tar -C "$root" -c . | podman import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PIP_CERT=/etc/ssl/certs/build-ca-bundle.crt' \
    --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/build-ca-bundle.crt' \
    --change 'CMD ["python3"]' \
    - "$BASE_IMAGE" >/dev/null
}

build() {
  local context=. start=$SECONDS
  if [[ -n ${CONTEXT_REV:-} ]]; then
    context=$(mktemp -d /var/tmp/vit-digits-context.XXXXXX)
    trap 'rm -rf "$context"' RETURN
    git archive "$CONTEXT_REV" | tar -x -C "$context"
    cp Dockerfile .dockerignore "$context/"
    log "context: $CONTEXT_REV ($(git rev-parse --short "$CONTEXT_REV")) + this checkout's Dockerfile"
  fi
  log "podman build $TAG (target $TARGET, TORCH_VARIANT=$TORCH_VARIANT, base $BASE_IMAGE)"
  podman build --format docker --network host \
    --build-arg PYTHON_IMAGE="$BASE_IMAGE" --build-arg TORCH_VARIANT="$TORCH_VARIANT" \
    --target "$TARGET" -t "$TAG" -f "$context/Dockerfile" "$context"
  log "built $TAG in $((SECONDS - start)) s: $(podman image inspect --format '{{.Size}}' "$TAG" | numfmt --to=iec) "
}

case "${1:-all}" in
  setup) setup ;;
  base) base ;;
  build) build ;;
  all) setup && base && build ;;
  *) echo "usage: $0 [setup|base|build|all]" >&2; exit 2 ;;
esac
