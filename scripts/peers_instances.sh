#!/usr/bin/env bash
# The peers given INSTANCES model instances each (default 2: LitServe's workers_per_device, Triton
# instances of the tensor model), the way our engine's lanes use a second core. ../shared/peers runs each
# peer with one; this copies the harness to a temporary folder, raises that count there and runs it.
# Usage (from the checkout, after `make bench-peers` set up the peers' venv):
#   bash scripts/peers_instances.sh [--only vit-digits,LitServe,PyTriton] [--seconds 8]
set -euo pipefail
n=${INSTANCES:-2}
peers=$(cd "${PEERS:-../shared/peers}" && pwd)
venv=$(cd "${PEERS_VENV:-.peers-venv}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$peers"/*.py "$tmp"/
sed -i "s/workers_per_device=1/workers_per_device=$n/" "$tmp/litserve_server.py"
# Each Triton instance needs a callable of its own (the same one twice gave no second instance's speed):
# a fresh copy of the model behind each, as a second LitServe worker has.
"$venv/bin/python" - "$tmp/pytriton_server.py" "$n" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
src = open(path).read()
factory = (
    "def tensor_instance():\n"
    "    own = common.load()\n\n"
    "    @batch\n"
    "    def infer(image):\n"
    "        rows = own(image.astype(np.float32) / 255.0)\n"
    "        return {'probabilities': np.array([r['probabilities'] for r in rows], np.float32)}\n\n"
    "    return infer\n\n\n"
)
old = 't.bind("vit-mnist", infer_tensor,'
new = f't.bind("vit-mnist", [infer_tensor] + [tensor_instance() for _ in range({n - 1})],'
if old in src and 'if __name__ == "__main__":' in src:
    src = src.replace(old, new).replace('if __name__ == "__main__":', factory + 'if __name__ == "__main__":')
    open(path, "w").write(src)
PY
if ! grep -q "workers_per_device=$n" "$tmp/litserve_server.py" || ! grep -q "tensor_instance() for" "$tmp/pytriton_server.py"; then
    echo "peers_instances.sh: the harness in $peers changed; update the two sed lines" >&2
    exit 1
fi
echo "--- $(date -u '+%F %H:%M') UTC, commit $(git rev-parse --short HEAD), peers with $n instances"
MNIST_RAW=${MNIST_RAW:-$peers/../data/MNIST/raw} PEERS_VENV=$venv "$venv/bin/python" "$tmp/run.py" --project . "$@"
