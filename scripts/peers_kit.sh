#!/usr/bin/env bash
# Packs what the side-by-side comparison (../shared/peers: LitServe and Triton via PyTriton on our model)
# needs on a lent GPU machine into .device/peers/ (git-ignored), beside scripts/device_kit.sh's kit:
#   harness/        ../shared/peers' scripts, unchanged (that folder does not travel)
#   mnist/          the first 16 of MNIST's test digits (the harness makes its request bodies from the 4th)
#   site.tar.xz     LitServe, tritonclient, PyTriton and what they need, installed for Python 3.12 at the
#                   versions of the peers venv `make bench-peers` made here, less what the machine has
#                   (KINDS.md) or .device/whl carries. PyTriton keeps only its 3.12 stub: its wheel is
#                   55 MB, mostly stubs for five other Pythons and the libpython3.13 they bring
#   numpy1.tar.xz   numpy 1.x for the peers alone, as in their venv here: PyTriton 0.7 under numpy 2
#                   answers empty tensors and its stub dies on BYTES inputs (seen on a 3.12 stand-in)
#   libpython3.12.deb  Ubuntu 24.04's shared libpython, should the machine lack it (Triton's stub needs it)
# About 42 MB, xz-packed to fit the 64 MiB a call carries. A call carries [".device/whl", ".device/deb",
# ".device/peers"] (not .device/data: the training set is 11 MB the comparison does not need) and runs
#   source scripts/device_env.sh && bash scripts/gpu_peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
kit=.device/peers
peers=${PEERS:-../shared/peers}
venv=${PEERS_VENV:-.peers-venv}
[ -f "$peers/run.py" ] || { echo "no peers harness at $peers (set PEERS)" >&2; exit 1; }
[ -x "$venv/bin/python" ] || { echo "no $venv: run 'make bench-peers' once first" >&2; exit 1; }
[ -d .device/whl ] || bash scripts/device_kit.sh

# On the GPU machine already (KINDS.md's package list), so not carried (numpy 1.x travels on its own).
on_machine=" aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs certifi click frozenlist grpcio h11
  httpcore httpx idna jinja2 markdown-it-py markupsafe mdurl ml-dtypes multidict mypy-extensions numpy
  packaging propcache protobuf pygments pyyaml rich shellingham typer typing-extensions typing-inspect
  urllib3 uvloop wrapt yarl zipp "
carried=$(ls .device/whl | sed -E 's/-[0-9].*//; s/_/-/g' | tr '[:upper:]' '[:lower:]' | tr '\n' ' ')
# shellcheck disable=SC2086  # one argument per name
pins=$("$venv/bin/python" scripts/wheel_pins.py nvidia-pytriton litserve tritonclient \
  --extras tritonclient=grpc,http uvicorn=standard --skip $on_machine $carried)
numpy=$("$venv/bin/python" -c "import numpy; print(numpy.__version__)")
py312="--python-version 3.12 --implementation cp --only-binary=:all: --no-deps
  --platform manylinux_2_35_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_26_x86_64
  --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
  --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64"
quiet() { grep -v "^WARNING: Location" || true; }
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
rm -rf "$kit" && mkdir -p "$kit/harness" "$kit/mnist"
cp "$peers"/*.py "$kit/harness/"

# shellcheck disable=SC2086  # one argument per pin and option
python3 -m pip download -q $py312 -d "$tmp/whl" $pins 2>&1 | quiet
[ "$(ls "$tmp/whl" | wc -l)" -eq "$(echo "$pins" | wc -w)" ] || {
  echo "expected one wheel per package ($pins):" >&2; ls "$tmp/whl" >&2; exit 1; }
# shellcheck disable=SC2086
python3 -m pip install -q --root-user-action=ignore --no-index --no-compile $py312 --target "$tmp/site" "$tmp"/whl/*.whl 2>&1 | quiet
find "$tmp/site/pytriton/tritonserver/python_backend_stubs" -mindepth 1 -maxdepth 1 ! -name 3.12 -exec rm -rf {} +
rm -f "$tmp"/site/nvidia_pytriton.libs/libpython3-*
# Unpacked outside a site-packages folder, PyTriton takes itself for an editable install and looks for
# its libraries in tritonserver/external_libs.
ln -s ../../nvidia_pytriton.libs "$tmp/site/pytriton/tritonserver/external_libs"
tar cJf "$kit/site.tar.xz" -C "$tmp/site" .

# shellcheck disable=SC2086
python3 -m pip install -q --root-user-action=ignore --no-compile $py312 --target "$tmp/numpy" "numpy==$numpy" 2>&1 | quiet
find "$tmp/numpy" -type d -name tests -prune -exec rm -rf {} +
tar cJf "$kit/numpy1.tar.xz" -C "$tmp/numpy" .

# Triton's stub links libpython3.12.so.1.0. The machine's python3 is 3.12.3 in a venv (KINDS.md), most
# likely Ubuntu 24.04's, whose shared library is a package of its own that may not be installed there: the latest
# noble-updates build travels, used only when the machine has none (it needs glibc 2.38: not testable here).
ubuntu=http://archive.ubuntu.com/ubuntu
deb=$(curl -fsSL "$ubuntu/dists/noble-updates/main/binary-amd64/Packages.gz" | gunzip \
  | awk '/^Package: libpython3.12t64$/ {p = 1} p && /^Filename:/ {print $2; exit}') || true
if [ -n "$deb" ] && curl -fsSL -o "$kit/libpython3.12.deb" "$ubuntu/$deb"; then
  echo "libpython3.12 fallback: $(basename "$deb")"
else
  echo "warning: no libpython3.12 .deb from $ubuntu: Triton runs there only if the machine has the library" >&2
fi

raw=""
for root in "${DATA_ROOT:-}" ../shared/data .devdata .device/data; do
  if [ -n "$root" ] && [ -f "$root/MNIST/raw/t10k-images-idx3-ubyte.gz" ]; then raw="$root/MNIST/raw"; break; fi
done
[ -n "$raw" ] || { echo "MNIST's test files not found (DATA_ROOT, ../shared/data, .devdata)" >&2; exit 1; }
python3 - "$raw" "$kit/mnist" <<'PY'
import gzip
import struct
import sys

src, dst, n = sys.argv[1], sys.argv[2], 16
for name, head, size in (("t10k-images-idx3-ubyte", 16, 784), ("t10k-labels-idx1-ubyte", 8, 1)):
    with gzip.open(f"{src}/{name}.gz") as f:
        data = f.read(head + n * size)
    with gzip.open(f"{dst}/{name}.gz", "wb") as f:  # the same format, the header's count cut to n
        f.write(data[:4] + struct.pack(">I", n) + data[8:])
PY
du -sh "$kit" .device/whl .device/deb
echo "carry: [\".device/whl\", \".device/deb\", \".device/peers\"]; on the machine:"
echo "  source scripts/device_env.sh && bash scripts/gpu_peers.sh"
