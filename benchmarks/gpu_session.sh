#!/usr/bin/env bash
# Everything munet measures on a lent GPU, in ONE bounded call (one H200/H100, 16 cores, ~9.5 min):
#
#   OUT=/path/out bash benchmarks/gpu_session.sh        # on the GPU machine ($OUT: files back)
#   DRY=1 OUT=/tmp/gpu_session bash benchmarks/gpu_session.sh   # the same stages on this CPU
#
# Stages (each bounded by `timeout`; a failed stage is logged and the next one runs):
#   1. speed    benchmarks/gpu_train.py (agents' path vs a plain loop, MFU) and the GPU part of
#               benchmarks/es_devices.py, on a quiet machine, first;
#   2. roots    benchmarks/gpu_roots.sh in the background: the recipe chosen on validation,
#               the VitCpu and VitT3 roots pretrained with it, the new VitCpu root against the
#               shipped one (validation), files as munet/pretrain/roots wants them;
#   3. bench    beside the roots, `munet benchmark` runs the suite on the CPU cores (3 seeds,
#               5 methods) from the shipped VitCpu root, stopped in time; its cells are
#               resumable, so what did not finish is finished elsewhere with the same command.
# Back in $OUT (at most 8 files): log.txt, speed.txt, roots.tar.gz, VitT3.safetensors, bench.tar.gz.
set -u
ROOT_DIR="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT_DIR"
OUT="${OUT:?set OUT to the output folder}"
WORK="${WORK:-/tmp/munet_gpu_session}"
rm -rf "$WORK"; mkdir -p "$OUT" "$WORK"
PYTHON="${PYTHON:-python3}"
export PYTHONPATH="$ROOT_DIR${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
LOG="$OUT/log.txt"
log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
START=$SECONDS
if [ "${DRY:-0}" = "1" ]; then
  SPEED_LIMIT=60; BENCH_END=280; WORKERS=2
  GPU_TRAIN=(--device cpu --workloads tiny=mu/4,1,16,8 --rounds 1 --steps 2)
  ES=(--max-particles 32 --max-gpu-particles 64 --rounds 1)
  BENCH=(--quick --seeds 0 --methods finetune,linear --tasks 1k/synth-conjunction)
else
  SPEED_LIMIT=80; BENCH_END="${BENCH_END:-545}"; WORKERS="${WORKERS:-8}"
  GPU_TRAIN=(--rounds 2 --steps 10)
  ES=(--max-particles 256 --max-gpu-particles 16384 --rounds 2)
  BENCH=()
fi

log "gpu_session.sh DRY=${DRY:-0} in $ROOT_DIR; $(nproc) cpus"
nvidia-smi >> "$LOG" 2>&1 || true
"$PYTHON" -c 'import torch; print("torch", torch.__version__, torch.cuda.is_available())' >> "$LOG" 2>&1

# 1. Speed, on a quiet machine.
{
  echo "# python benchmarks/gpu_train.py ${GPU_TRAIN[*]}"
  timeout "$SPEED_LIMIT" "$PYTHON" benchmarks/gpu_train.py "${GPU_TRAIN[@]}" 2>&1
  echo "# exit $?"
  echo "# python benchmarks/es_devices.py ${ES[*]}"
  timeout 60 "$PYTHON" benchmarks/es_devices.py "${ES[@]}" 2>&1
  echo "# exit $?"
} > "$OUT/speed.txt"
log "speed done after $((SECONDS - START))s"

# 2. Roots, in the background (GPU).
OUT="$WORK/roots" PYTHON="$PYTHON" T_CHOICE="${T_CHOICE:-130}" T_VITCPU="${T_VITCPU:-150}" \
  T_VITT3="${T_VITT3:-120}" T_COMPARE="${T_COMPARE:-60}" \
  bash benchmarks/gpu_roots.sh > "$WORK/roots.out" 2>&1 &
ROOTS_PID=$!

# 3. The benchmark on the CPU cores beside it, from the shipped root (the new root's own figures
# come from the roots stage; the suite is rerun from it where it ships), stopped in time.
LEFT=$((BENCH_END - (SECONDS - START)))
log "munet benchmark: ${LEFT}s, $WORKERS workers, from the shipped VitCpu root"
CUDA_VISIBLE_DEVICES= OMP_NUM_THREADS=1 timeout --signal=TERM --kill-after=10 "$LEFT" \
  "$PYTHON" -m munet benchmark --out "$WORK/bench" --workers "$WORKERS" \
  "${BENCH[@]}" >> "$WORK/bench.out" 2>&1
log "benchmark exit $? after $((SECONDS - START))s"
wait $ROOTS_PID
log "roots exit $? after $((SECONDS - START))s"

# What comes back: small files only (states stay behind).
# VitT3's weights come back as their own file (a tar of both roots could pass 16 MiB).
for f in "$WORK/roots/VitT3.safetensors" "$WORK/roots/VitT3/root.safetensors"; do
  [ -f "$f" ] && { cp "$f" "$OUT/VitT3.safetensors"; break; }
done
tar -C "$WORK" -czf "$OUT/roots.tar.gz" --exclude='state-*' --exclude='*.lock' \
  --exclude='roots/choice/*/*.safetensors' --exclude='roots/VitT3*.safetensors' \
  --exclude='roots/VitT3/*.safetensors' roots roots.out 2>>"$LOG"
tar -C "$WORK" -czf "$OUT/bench.tar.gz" --exclude='bench/state/seed_*' bench bench.out 2>>"$LOG"
log "done after $((SECONDS - START))s: $(ls -la "$OUT" | tail -n +2 | awk '{print $5, $9}' | tr '\n' ' ')"
