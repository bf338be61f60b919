#!/usr/bin/env bash
# The side-by-side comparison on a lent GPU machine (docs/gpu-session.md): ../shared/peers' harness,
# unchanged, runs vit-digits (`make run`, as a user starts it), LitServe and Triton (PyTriton) one after the
# other on the same ViT on the GPU, the same preprocessing and the same request bodies (wrk, 64
# connections, then 1). Then, unless SWEEP is empty, bench.scaling at 256 clients in the same call.
# Everything lands in $OUT:
#   peers.txt       the harness's table, under a header like `make bench-peers` writes
#   triton-smoke.log  PyTriton's own log from a short start before the run (why it failed, if it did)
#   peers-dmon.log  the GPU's load meanwhile;  scaling.*  bench.scaling's json, markdown and log
# Here first:  bash scripts/peers_kit.sh   (-> .device/peers, 42 MB)
# There:       source scripts/device_env.sh && COMMIT=<short sha> bash scripts/gpu_peers.sh
#              (carry [".device/whl", ".device/deb", ".device/peers"])
# Knobs: SECONDS_64 (wrk seconds at 64 connections, 8), ONLY (systems, comma-separated), PEERS_DEVICE
# (cuda when the machine has it), SWEEP (workers for bench.scaling, 14; empty skips), RUN_S (5).
set -uo pipefail
: "${OUT:?set OUT to the folder the results go to}"
root=$PWD kit=$PWD/.device/peers
[ -f "$kit/harness/run.py" ] || { echo "no .device/peers: run scripts/peers_kit.sh here first" >&2; exit 1; }
SECONDS_64=${SECONDS_64:-8} ONLY=${ONLY:-vit-digits,LitServe,PyTriton} SWEEP=${SWEEP-14} RUN_S=${RUN_S:-5}
stamp() { echo "== $(date +%T) $*"; }
py=$(command -v python3)
export PEERS_DEVICE=${PEERS_DEVICE:-$("$py" -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')")}

stamp "installing the peers' kit"
if [ ! -f /tmp/peers-site/.done ]; then
  mkdir -p /tmp/peers-site /tmp/peers-numpy && tar xJf "$kit/numpy1.tar.xz" -C /tmp/peers-numpy \
    && tar xJf "$kit/site.tar.xz" -C /tmp/peers-site && touch /tmp/peers-site/.done
fi
# Who sees the kit: the harness (tritonclient makes its bodies) and the peers (with numpy 1.x first, as
# in their venv here); not our service. Triton's Python stub starts an interpreter of this python3's
# environment (PyTriton puts its bin/ first on PATH) without PYTHONPATH, so the kit goes in through a .pth
# file there that reads PEERS_SYS_PATH, which the stub inherits.
echo 'import os, sys; sys.path[:0] = [p for p in os.environ.get("PEERS_SYS_PATH", "").split(":") if p]' \
  >"$("$py" -c "import site; print(site.getsitepackages()[0])")/vit-digits-peers.pth"
# The harness starts the peers with $PEERS_VENV/bin/python and us with `make run` (.venv/bin/python once
# .venv/.installed is newer than pyproject.toml). Both become this python3, through wrappers (a linked
# venv python loses its site-packages).
mkdir -p /tmp/peers-venv/bin .venv/bin
printf '#!/bin/sh\nPEERS_SYS_PATH=/tmp/peers-numpy:/tmp/peers-site exec %s "$@"\n' "$py" >/tmp/peers-venv/bin/python
printf '#!/bin/sh\nPEERS_SYS_PATH= exec %s "$@"\n' "$py" >.venv/bin/python
chmod +x /tmp/peers-venv/bin/python .venv/bin/python
touch .venv/.installed
export PEERS_VENV=/tmp/peers-venv MNIST_RAW=$kit/mnist
if ! command -v make >/dev/null; then  # what `make run HOST=.. PORT=..` does, should the machine lack make
  mkdir -p /tmp/peers-bin && export PATH=/tmp/peers-bin:$PATH
  printf '#!/bin/sh\n[ "$1" = run ] || exit 2\nshift\nexport "$@"\nexec .venv/bin/python -m app\n' >/tmp/peers-bin/make
  chmod +x /tmp/peers-bin/make
fi

# Triton's Python stub links libpython3.12.so.1.0, which must be the one whose standard library this
# python3 runs (a mismatch fails inside the stub): its LIBDIR, else wherever the system keeps it.
"$py" -c "import sys, sysconfig as c; print('python3:', sys.version.split()[0], sys.base_prefix, \
c.get_config_var('LIBDIR'), 'shared' if c.get_config_var('Py_ENABLE_SHARED') else 'static')"
libdir=$("$py" -c "import sysconfig; print(sysconfig.get_config_var('LIBDIR') or '')")
found=""
for d in "$libdir" /usr/lib/x86_64-linux-gnu /usr/local/lib; do
  if [ -n "$d" ] && [ -e "$d/libpython3.12.so.1.0" ]; then found=$d; break; fi
done
# None there: Ubuntu's own build of the library, when python3 is Ubuntu's (scripts/peers_kit.sh).
if [ -z "$found" ] && [ -f "$kit/libpython3.12.deb" ] && [ "$("$py" -c 'import sys; print(sys.base_prefix)')" = /usr ]; then
  dpkg -x "$kit/libpython3.12.deb" /tmp/libpython && found=/tmp/libpython/usr/lib/x86_64-linux-gnu
fi
echo "libpython3.12.so.1.0: ${found:-none found}"
[ -z "$found" ] || export LD_LIBRARY_PATH=$found${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
/tmp/peers-venv/bin/python -c "import litserve, numpy, pytriton.triton, tritonclient.http; print('peers import: ok, numpy', numpy.__version__)" || exit 1

# A short start of the Triton peer first, with its log kept: the harness discards the servers' output
# and waits 180 s for one that never comes up.
if [[ ",$ONLY," == *,PyTriton,* ]]; then
  stamp "PyTriton smoke start"
  (cd "$kit/harness" && PROJECT=$root exec /tmp/peers-venv/bin/python pytriton_server.py --port 8390) \
    >"$OUT/triton-smoke.log" 2>&1 &
  smoke=$!
  up=""
  for _ in $(seq 90); do
    if "$py" -c "import httpx, sys; sys.exit(httpx.get('http://127.0.0.1:8390/v2/models/vit-mnist/ready').status_code != 200)" 2>/dev/null; then up=1; break; fi
    if ! kill -0 "$smoke" 2>/dev/null || grep -q "exited with failure" "$OUT/triton-smoke.log"; then break; fi
    sleep 1
  done
  kill "$smoke" 2>/dev/null; wait "$smoke" 2>/dev/null
  if [ -z "$up" ]; then
    echo "PyTriton did not come up; left out (its log: triton-smoke.log):"
    grep -iE "error|fail|not found" "$OUT/triton-smoke.log" | head -5
    ONLY=$(echo ",$ONLY," | sed 's/,PyTriton,/,/; s/^,//; s/,$//')
  fi
  sleep 2
fi

stamp "peers: $ONLY on $PEERS_DEVICE, $SECONDS_64 s at 64 connections"
nvidia-smi dmon -s u -d 1 >"$OUT/peers-dmon.log" 2>&1 &
dmon=$!
{ echo "--- $(date -u '+%F %H:%M') UTC, commit ${COMMIT:-?}, $(nproc) cores," \
    "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo 'no GPU'), PEERS_DEVICE=$PEERS_DEVICE"
  PEERS_SYS_PATH=/tmp/peers-site timeout 420 "$py" "$kit/harness/run.py" --project . --seconds "$SECONDS_64" --only "$ONLY" 2>&1
} | tee "$OUT/peers.txt"
kill "$dmon" 2>/dev/null

[ -n "$SWEEP" ] || { stamp "done"; exit 0; }
stamp "bench.scaling: workers $SWEEP, 256 connections"
timeout 150 "$py" -m bench.scaling --device "$PEERS_DEVICE" --connections 256 --workers "$SWEEP" \
  --models vit-mnist --baseline '' --seconds "$RUN_S" --out "$OUT" >"$OUT/scaling.log" 2>&1
grep -E "^workers=" "$OUT/scaling.log" || tail -20 "$OUT/scaling.log"
stamp "done"
