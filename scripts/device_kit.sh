#!/usr/bin/env bash
# Packs what a lent GPU machine lacks into .device/ (git-ignored), to be named in the device tool's `carry`.
#
# That machine (docs/gpu-session.md) has Python 3.12 with torch, numpy, Pillow, safetensors, uvloop,
# prometheus-client, pytest and httpx, and no network. It lacks the service's web stack (FastAPI,
# Starlette, uvicorn, httptools, python-multipart, pydantic, pydantic-settings), its gRPC stack (grpcio,
# grpcio-reflection, protobuf: every worker serves gRPC unless GRPC_PORT=0), wrk and MNIST. This
# script puts into .device/:
#   whl/   the web stack as cp312 manylinux wheels, at the versions this checkout's .venv runs
#   whl-grpc/  the gRPC stack the same way (left out of a call that carries the peers' kit)
#   deb/   wrk and its LuaJIT library, unpacked there by scripts/device_env.sh
#   data/  MNIST's four official .gz files (from DATA_ROOT, ../shared/data or .devdata)
# About 25 MB. Then, in every `run` on the machine: `source scripts/device_env.sh && ...`.
set -euo pipefail
cd "$(dirname "$0")/.."
kit=.device
venv=${VENV:-.venv}
[ -x "$venv/bin/python" ] || { echo "no $venv: run 'make .venv/.installed-dev' first" >&2; exit 1; }

# The web stack, and apart from it the gRPC stack (7.5 MB more, mostly grpcio), each with everything it
# needs, pinned to this venv's versions. Apart, so that a call that carries the peers' kit too can leave
# the gRPC wheels behind and stay under the carry limit (device_env.sh then sets GRPC_PORT=0).
web=$("$venv/bin/python" scripts/wheel_pins.py fastapi uvicorn httptools python-multipart pydantic-settings)
both=$("$venv/bin/python" scripts/wheel_pins.py fastapi uvicorn httptools python-multipart pydantic-settings \
  grpcio grpcio-reflection)
grpc_only=$(comm -13 <(tr ' ' '\n' <<<"$web" | sort) <(tr ' ' '\n' <<<"$both" | sort) | tr '\n' ' ')
mkdir -p "$kit/deb" "$kit/data/MNIST/raw"
download() {  # folder, pins
  rm -rf "$1" && mkdir -p "$1"
  # shellcheck disable=SC2086  # one argument per pin
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64 -d "$1" $2 2>&1 \
    | grep -v "^WARNING: Location" || true
  [ "$(ls "$1" | wc -l)" -eq "$(echo "$2" | wc -w)" ] || {
    echo "expected one wheel per package in $1:" >&2; ls "$1" >&2; exit 1; }
}
download "$kit/whl" "$web"
download "$kit/whl-grpc" "$grpc_only"

# wrk for bench.scaling; the machine is x86-64 Debian-like: its .debs unpack anywhere.
(cd "$kit/deb" && rm -f ./*.deb && apt-get download -qq wrk libluajit2-5.1-2 2>/dev/null) || {
  apt-get update -qq && (cd "$kit/deb" && apt-get download -qq wrk libluajit2-5.1-2); }

raw=""
for root in "${DATA_ROOT:-}" ../shared/data .devdata; do
  if [ -n "$root" ] && [ -f "$root/MNIST/raw/train-images-idx3-ubyte.gz" ]; then raw="$root/MNIST/raw"; break; fi
done
[ -n "$raw" ] || { echo "MNIST's .gz files not found (DATA_ROOT, ../shared/data, .devdata)" >&2; exit 1; }
cp "$raw"/*-ubyte.gz "$kit/data/MNIST/raw/"
du -sh "$kit"
echo "carry: [\"$kit/whl\", \"$kit/whl-grpc\", \"$kit/deb\", \"$kit/data\"]; on the machine: source scripts/device_env.sh"
