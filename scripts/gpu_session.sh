#!/usr/bin/env bash
# One call on a lent GPU machine (docs/gpu-session.md): first the ViT candidates, fine-tuned side by side
# from the shipped vit-mnist with the shipped CNN as teacher; then, once they are done, the serving checks
# (tests/gpu and bench.scaling at 256 clients) on the shipped checkpoints. Everything lands in $OUT:
#   cand.tgz        runs/cand-<c>/vit-mnist (uncalibrated: calibrate on the CPU afterwards) and the logs
#   gpu-tests.log   pytest tests/gpu
#   scaling.*       bench.scaling's json, markdown and log;  dmon.log  GPU load while it runs
# On the machine:  source scripts/device_env.sh && bash scripts/gpu_session.sh
# Knobs (environment): CANDIDATES (recipe names below), EPOCHS, TRAIN_S (hard stop per candidate), SWEEP
# (workers; empty skips bench.scaling), RUN_S (seconds per wrk run), DEVICE (cuda), EXTRA (more train
# arguments: a dry run on a CPU uses --device cpu --max-steps 2).
set -uo pipefail
: "${OUT:?set OUT to the folder the results go to}"
CANDIDATES=${CANDIDATES:-hard soft reg} EPOCHS=${EPOCHS:-50} TRAIN_S=${TRAIN_S:-400}
SWEEP=${SWEEP-1,4,8,14} RUN_S=${RUN_S:-5}
DEVICE=${DEVICE:-cuda} EXTRA=${EXTRA:-}
stamp() { echo "== $(date +%T) $*"; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null

stamp "training: $EPOCHS epochs per candidate, at most ${TRAIN_S}s each"
common="--model vit-mnist --name vit-mnist --no-progress --no-plots --no-calibrate
  --init-from model_store/checkpoints/vit-mnist --teacher model_store/checkpoints/cnn-mnist
  --pen-digits 10000 --epochs $EPOCHS --batch-size 512 --lr 3e-4 --warmup-epochs 2"
declare -A recipe=(
  [hard]=""                                             # DeiT's hard labels, weight 0.5
  [soft]="--distill soft --distill-weight 0.7"          # Hinton's soft targets
  [reg]="--set drop_path=0.1 --elastic-alpha 34"        # hard, plus stochastic depth and elastic warps
  [softreg]="--distill soft --distill-weight 0.7 --set drop_path=0.1 --elastic-alpha 34"
  [reg70]="--set drop_path=0.1 --elastic-alpha 34 --epochs 70"   # a later --epochs wins
  [softreg70]="--distill soft --distill-weight 0.7 --set drop_path=0.1 --elastic-alpha 34 --epochs 70"
)
for c in $CANDIDATES; do
  # shellcheck disable=SC2086  # word splitting of the argument lists is the point
  timeout "$TRAIN_S" python3 -m training train $common ${recipe[$c]} $EXTRA \
    --store-dir "runs/cand-$c" --run-dir "runs/$c" >"runs-$c.log" 2>&1 &
done
wait
for c in $CANDIDATES; do
  echo "-- $c"; grep -E "epoch +(1|10|20|30|40|50|60|70)/|test \(|Error|error" "runs-$c.log" | cut -c1-160 | tail -9
done
tar czf "$OUT/cand.tgz" runs/cand-* runs/*/metrics.csv runs-*.log 2>/dev/null

stamp "tests/gpu"
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/gpu >"$OUT/gpu-tests.log" 2>&1
tail -3 "$OUT/gpu-tests.log"

[ -n "$SWEEP" ] || { stamp "done"; exit 0; }
stamp "bench.scaling: workers $SWEEP, 256 connections"
nvidia-smi dmon -s u -d 1 >"$OUT/dmon.log" 2>&1 &
dmon=$!
timeout 240 python3 -m bench.scaling --device "$DEVICE" --connections 256 --workers "$SWEEP" \
  --models vit-mnist --baseline '' --seconds "$RUN_S" --out "$OUT" >"$OUT/scaling.log" 2>&1
kill "$dmon" 2>/dev/null
grep -E "^workers=" "$OUT/scaling.log" || tail -20 "$OUT/scaling.log"
stamp "done"
