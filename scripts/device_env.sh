# shellcheck shell=bash
# Sourced on a lent GPU machine, in the repository root, with .device/ carried (scripts/device_kit.sh):
# the web stack's wheels into /tmp/site (on PYTHONPATH), wrk onto PATH, DATA_ROOT at the MNIST files.
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
export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
export PATH=/tmp/wrk/usr/bin:$PATH
luajit=$(dirname "$(find /tmp/wrk -name 'libluajit*.so*' | head -1)")
export LD_LIBRARY_PATH=$luajit${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export DATA_ROOT=$kit/data PYTHONUNBUFFERED=1
python3 -c "import fastapi, grpc, uvicorn, pydantic_settings, torch; print('device env:', torch.__version__, \
'cuda' if torch.cuda.is_available() else 'NO CUDA', 'fastapi', fastapi.__version__, 'grpc', grpc.__version__)"
wrk -v 2>&1 | head -1
