# shellcheck shell=bash
# Sourced on a lent GPU machine, in the repository root, with .device/ carried (scripts/device_kit.sh):
# the web stack's wheels (and the gRPC stack's, when carried) into /tmp/site (on PYTHONPATH), wrk onto
# PATH, DATA_ROOT at the MNIST files.
# Idempotent: a warm machine keeps /tmp between calls, so a second `source` costs nothing.
kit=$PWD/.device
if [ ! -d "$kit/whl" ]; then
  echo "no .device/ here: run scripts/device_kit.sh, and name .device in carry" >&2
  return 1 2>/dev/null || exit 1
fi
if [ ! -f /tmp/site/.done ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$kit"/whl/*.whl \
    && mkdir -p /tmp/wrk && for f in "$kit"/deb/*.deb; do dpkg -x "$f" /tmp/wrk; done \
    && touch /tmp/site/.done
fi
if [ -d "$kit/whl-grpc" ] && [ ! -f /tmp/site/.grpc ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    "$kit"/whl-grpc/*.whl && touch /tmp/site/.grpc
fi
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
export PATH=/tmp/wrk/usr/bin:$PATH
luajit=$(dirname "$(find /tmp/wrk -name 'libluajit*.so*' | head -1)")
export LD_LIBRARY_PATH=$luajit${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export DATA_ROOT=$kit/data PYTHONUNBUFFERED=1
# Without the gRPC stack (a call that left .device/whl-grpc behind), the service serves HTTP alone: a
# worker would otherwise fail to import grpc. testkit's launcher turns gRPC off by itself then.
python3 -c "import grpc" 2>/dev/null || export GRPC_PORT=0
python3 -c "import fastapi, uvicorn, pydantic_settings, torch; print('device env:', torch.__version__, \
'cuda' if torch.cuda.is_available() else 'NO CUDA', 'fastapi', fastapi.__version__, \
'GRPC_PORT=0: no grpc here' if '${GRPC_PORT:-}' == '0' else 'grpc: yes')"
wrk -v 2>&1 | head -1
