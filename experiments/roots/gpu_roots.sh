#!/usr/bin/env bash
# Candidate roots pretrained side by side on a lent GPU, alone on it, in ONE bounded call.
#
#   OUT=/path/out bash experiments/roots/gpu_roots.sh          # one H200/H100, 16 cores
#   DRY=1 OUT=/tmp/gpu_roots bash experiments/roots/gpu_roots.sh   # the same stages on this CPU, ~1 min
#
# Each candidate is PRESET:RECIPE:CLASSES:SIZE:BATCH[:INSTANCES[:SEED[:THUMBNAIL]]]
# (instances per image, up to, default 1; the seed, default 0; the thumbnail's side, default 0
# = off) and becomes one `munet pretrain` process. Seeds matter: on this project's CPU one seed
# moved VitCpu's validation probe by 0.04 (experiments/pretrain_log.md), as much as most differences
# between recipes, so a choice between close candidates wants each at several seeds;
# all of them share the GPU at once (these small models are launch-bound: one alone leaves the
# GPU mostly idle, so side by side costs each little) with nothing else on the CPU cores that
# feed them (the run of 2026-11-27 that had 8 benchmark processes beside it got ~30 steps/s).
# Each run has a wall-clock budget (--minutes, turned into steps after timing the first ones)
# and --max-seconds (a checkpoint before the stage's limit), so a timeout still leaves
# root.safetensors + card.json. Large batches are where a GPU pays: a step of 1,024 images
# costs about what a step of 128 does there.
#
# Nothing is chosen here. The candidates come back as files and are compared with the shipped
# root on the evaluation tasks' VALIDATION splits by experiments/roots/root_compare.py, anywhere (the
# CPU is fine: probes and short fine-tunes); test splits are read once, for the chosen root's
# card.
#
# Out: $OUT/roots.tar.gz (each candidate's root.safetensors + card.json, no resumable state),
# $OUT/log.txt (timestamps, each run's exit code, GPU utilisation every 30 s),
# $OUT/commands.txt (every command exactly as run).
# Knobs (environment): PYTHON, DEVICE, CANDIDATES, MINUTES, STEPS (a fixed budget instead of
# MINUTES: runs that start together time their first steps too fast), MAX_SECONDS, LIMIT, CKPT, LR.
set -u
ROOT_DIR="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT_DIR"
OUT="${OUT:?set OUT to the output folder}"
WORK="${WORK:-$OUT/roots}"
mkdir -p "$OUT" "$WORK"
LOG="$OUT/log.txt"
PYTHON="${PYTHON:-python3}"
export PYTHONPATH="$ROOT_DIR${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1

if [ "${DRY:-0}" = "1" ]; then
  DEVICE="${DEVICE:-cpu}"
  CANDIDATES="${CANDIDATES:-VitCpu:fractal:6:8:8:2:1:2 VitT3:fractal:6:32:4}"
  # LIMIT only bounds a hang: --max-seconds ends each run. On a 2-core machine loaded by two
  # pretrainings and a test run (2026-11-28), both runs failed under a 60 s limit and passed
  # under 180 s.
  MINUTES="${MINUTES:-0.15}"; MAX_SECONDS="${MAX_SECONDS:-15}"; LIMIT="${LIMIT:-180}"
  CKPT="${CKPT:-5}"; EXTRA=(--eval-examples 16)
else
  DEVICE="${DEVICE:-cuda}"
  # VitCpu's shipped recipe (up to 3 instances, a 4 x 4 thumbnail; its task unsolved on the
  # CPU, held-out 0.65) at a GPU's batch and budget, at three seeds, so the choice between
  # it and the CPU root is not one seed's; and VitT3 with the same recipe at its own 32 px.
  # (The one-instance candidates of 2026-11-27 are in experiments/results/root_gpu_h200/.)
  CANDIDATES="${CANDIDATES:-VitCpu:fractal:100:24:1024:3:0:4 VitCpu:fractal:100:24:1024:3:1:4 VitCpu:fractal:100:24:1024:3:2:4 VitT3:fractal:1000:32:512:3:0:4}"
  MINUTES="${MINUTES:-5.5}"; MAX_SECONDS="${MAX_SECONDS:-360}"; LIMIT="${LIMIT:-400}"
  CKPT="${CKPT:-1000}"; EXTRA=()
fi

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }

log "gpu_roots.sh: DRY=${DRY:-0} device $DEVICE; $MINUTES min per run (stop at ${MAX_SECONDS}s)"
# A python without torch would fail every run the same way: say so once, before any run.
if ! "$PYTHON" -c "import torch" > /dev/null 2>&1; then
  log "error: PYTHON=$PYTHON cannot import torch; set PYTHON to an interpreter that has it (e.g. .venv/bin/python)"
  exit 2
fi
"$PYTHON" - >> "$LOG" 2>&1 <<'PY' || true
import os, torch
print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "-", "cpus", os.cpu_count())
PY

# GPU utilisation while the runs share it (says whether they were launch-bound).
if command -v nvidia-smi > /dev/null && [ "$DEVICE" != "cpu" ]; then
  ( while sleep 30; do
      log "gpu: $(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader)"
    done ) &
  WATCH=$!
fi

BUDGET=(--minutes "$MINUTES"); [ -n "${STEPS:-}" ] && BUDGET=(--steps "$STEPS")
names=()
pids=()
for candidate in $CANDIDATES; do
  # PRESET:RECIPE:CLASSES:SIZE:BATCH[:INSTANCES[:SEED[:THUMBNAIL]]]
  IFS=: read -r preset recipe classes size batch instances seed thumbnail <<< "$candidate"
  instances="${instances:-1}"; seed="${seed:-0}"; thumbnail="${thumbnail:-0}"
  name="$preset-${recipe//+/_}-$classes-${size}px-b$batch"
  [ "$instances" != 1 ] && name="$name-i$instances"
  [ "$seed" != 0 ] && name="$name-s$seed"
  [ "$thumbnail" != 0 ] && name="$name-t$thumbnail"
  dtype=float32; [ "$preset" = "VitT3" ] && dtype=float16  # VitT3 ships in float16 (< 4 MB)
  cmd=("$PYTHON" -m munet pretrain --agent "$preset" --recipe "$recipe" --classes "$classes"
       --image-size "$size" --batch-size "$batch" --instances "$instances"
       --seed "$seed" --thumbnail "$thumbnail" ${LR:+--lr "$LR"} "${BUDGET[@]}"
       --max-seconds "$MAX_SECONDS" --checkpoint-every "$CKPT" --dtype "$dtype"
       --device "$DEVICE" --threads 2 --no-progress "${EXTRA[@]}" --out "$WORK/$name")
  printf '%s\n' "${cmd[*]}" >> "$OUT/commands.txt"
  log "start $name"
  timeout --signal=TERM --kill-after=10 "$LIMIT" "${cmd[@]}" > "$WORK/$name.log" 2>&1 &
  names+=("$name")
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  code=$?
  summary="$(grep -h '^pretrained' "$WORK/${names[$i]}.log" | tail -n 1)"
  log "${names[$i]}: exit $code; ${summary:-no summary (see roots/${names[$i]}.log)}"
done
[ -n "${WATCH:-}" ] && kill "$WATCH" 2>/dev/null

# What comes back: roots, cards and logs (the resumable states stay behind).
tar -C "$WORK" -czf "$OUT/roots.tar.gz" --exclude="state-*" --exclude="*.lock" .
log "done: $(ls -la "$OUT" | tail -n +2 | awk '{print $5, $9}' | tr '\n' ' ')"
