#!/usr/bin/env bash
# Everything munet checks and measures on a lent GPU, in ONE bounded call (one H200/H100):
#
#   OUT=/path/out bash experiments/roots/gpu_session.sh          # on the GPU machine (~9 min)
#   SPEED=0 OUT=/path/out bash experiments/roots/gpu_session.sh  # without the speed stage
#   DRY=1 OUT=/tmp/gpu_session bash experiments/roots/gpu_session.sh  # the stages on this CPU
#
# Stages, each bounded by `timeout` (a failed stage is logged and the next one runs):
#   1. tests   the tests that need a GPU (tests/pretrain/test_pretrain_device.py: `munet
#              pretrain --device cuda`, bf16, resume, the root loads on a CPU);
#   2. speed   benchmarks/gpu_train.py (agents' path vs a plain loop, MFU) and the GPU part of
#              benchmarks/es_devices.py, on a quiet machine (SPEED=0 skips it);
#   3. roots   experiments/roots/gpu_roots.sh: candidate roots pretrained side by side, alone on the
#              GPU; compared on validation afterwards with experiments/roots/root_compare.py.
# Back in $OUT: log.txt, tests.txt, speed.txt, roots.tar.gz, commands.txt.
set -u
ROOT_DIR="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT_DIR"
OUT="${OUT:?set OUT to the output folder}"
mkdir -p "$OUT"
PYTHON="${PYTHON:-python3}"
export PYTHONPATH="$ROOT_DIR${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
LOG="$OUT/log.txt"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
START=$SECONDS
if [ "${DRY:-0}" = "1" ]; then
  GPU_TRAIN=(--device cpu --workloads tiny=mu/4,1,16,8 --rounds 1 --steps 2)
  ES=(--max-particles 32 --max-gpu-particles 64 --rounds 1)
  SPEED_LIMIT=60
else
  GPU_TRAIN=(--rounds 2 --steps 10)
  ES=(--max-particles 256 --max-gpu-particles 16384 --rounds 2)
  SPEED_LIMIT=80
fi

log "gpu_session.sh DRY=${DRY:-0} in $ROOT_DIR; $(nproc) cpus"
nvidia-smi >> "$LOG" 2>&1 || true

# 1. The tests that need a GPU (they skip, saying so, where there is none).
timeout 120 "$PYTHON" -m pytest -q -s -rs -p no:cacheprovider \
  tests/pretrain/test_pretrain_device.py > "$OUT/tests.txt" 2>&1
log "tests exit $? after $((SECONDS - START))s: $(tail -n 1 "$OUT/tests.txt")"

# 2. Speed, on a quiet machine.
if [ "${SPEED:-1}" = "1" ]; then
  {
    echo "# python benchmarks/gpu_train.py ${GPU_TRAIN[*]}"
    timeout "$SPEED_LIMIT" "$PYTHON" benchmarks/gpu_train.py "${GPU_TRAIN[@]}" 2>&1
    echo "# exit $?"
    echo "# python benchmarks/es_devices.py ${ES[*]}"
    timeout 60 "$PYTHON" benchmarks/es_devices.py "${ES[@]}" 2>&1
    echo "# exit $?"
  } > "$OUT/speed.txt"
  log "speed done after $((SECONDS - START))s"
fi

# 3. Candidate roots, alone on the GPU.
OUT="$OUT" WORK="${TMPDIR:-/tmp}/munet_gpu_roots" PYTHON="$PYTHON" bash experiments/roots/gpu_roots.sh
log "roots exit $? after $((SECONDS - START))s"
