#!/usr/bin/env bash
# New built-in roots on a lent GPU, in ONE call: choose the recipe on validation, pretrain the
# VitCpu and VitT3 roots with it, measure them against the shipped roots, all into $OUT.
#
#   OUT=/path/out bash benchmarks/gpu_roots.sh          # one H200/H100, 16 cores, ~6 min wall
#   DRY=1 OUT=/tmp/gpu_roots bash benchmarks/gpu_roots.sh   # the same stages on this CPU, ~2 min
#
# Stages, each bounded by `timeout` and independent (a failed or timed-out stage is logged and
# the next one runs with a fallback; every stage leaves usable files):
#   1. choice   benchmarks/root_recipe_choice.py on cuda, a short budget per candidate
#               -> $OUT/choice/choice.json (validation splits only). Fallback recipe: $FALLBACK.
#   2. vitcpu   munet pretrain --agent VitCpu with the chosen recipe, classes and image size,
#               --minutes (steps from the measured rate) and --max-seconds (a checkpoint at the
#               limit), checkpoints every $CKPT steps -> $OUT/VitCpu/{root.safetensors,card.json}
#   3. vitt3    the same for VitT3 (its own 32 px) -> $OUT/VitT3/
#   4. compare  benchmarks/root_compare.py, shipped root vs new root, probe + fine-tune on the
#               validation splits; stored in the new card's `validation` key
#   5. collect  $OUT/VitCpu.safetensors + VitCpu.json (and VitT3), as munet/pretrain/roots
#               wants them; $OUT/commands.txt: every command exactly as run
# Log: $OUT/log.txt (everything, with timestamps and each stage's exit code).
# Needs: a Python with torch (CUDA build) and munet's dependencies (PYTHON=...); the working
# tree of munet (this script cds to it and puts it on PYTHONPATH).
# Knobs (environment): PYTHON, DEVICE, T_CHOICE, T_VITCPU, T_VITT3, T_COMPARE (seconds),
# BATCH, CKPT, FALLBACK, CANDIDATES.
set -u
ROOT_DIR="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT_DIR"
OUT="${OUT:?set OUT to the output folder}"
mkdir -p "$OUT"
LOG="$OUT/log.txt"
PYTHON="${PYTHON:-python}"
export PYTHONPATH="$ROOT_DIR${PYTHONPATH:+:$PYTHONPATH}"
MIX="fractal_ex+contours_ex+noise"
FALLBACK="${FALLBACK:-$MIX:1000:16}"

if [ "${DRY:-0}" = "1" ]; then
  DEVICE="${DEVICE:-cpu}"
  T_CHOICE="${T_CHOICE:-40}"; T_VITCPU="${T_VITCPU:-30}"; T_VITT3="${T_VITT3:-30}"
  T_COMPARE="${T_COMPARE:-30}"
  CHOICE_ARGS=(--quick)
  CANDIDATES="${CANDIDATES:-fractal:4:8 $MIX:6:8}"
  BATCH="${BATCH:-8}"; CKPT="${CKPT:-5}"
  TINY=(--eval-examples 16 --threads 2)
  COMPARE_ARGS=(--quick)
else
  DEVICE="${DEVICE:-cuda}"
  # 130 + 65 + 75 + 45 = 315 s of stages, ~15 s of start-up and copying: under 6 minutes.
  T_CHOICE="${T_CHOICE:-130}"; T_VITCPU="${T_VITCPU:-65}"; T_VITT3="${T_VITT3:-75}"
  T_COMPARE="${T_COMPARE:-45}"
  # Candidates pretrain side by side on the one GPU (processes share it), each for a 35 s
  # schedule (stopped at 45 s in any case); then 8 processes probe and fine-tune every root on
  # every task.
  CHOICE_ARGS=(--minutes 0.58 --max-seconds 45 --finetune-steps 128 --max-train 1000
               --max-eval 500 --workers 8)
  CANDIDATES="${CANDIDATES:-fractal:100:16 $MIX:300:16 $MIX:1000:16 $MIX:1000:24 $MIX:1000:32}"
  BATCH="${BATCH:-128}"; CKPT="${CKPT:-500}"
  TINY=()
  COMPARE_ARGS=(--steps 128 384 --max-train 1000 --max-eval 500 --workers 8)
fi

log() { echo "[$(date -u +%H:%M:%S)] $*" | tee -a "$LOG"; }
# run NAME SECONDS CMD...: one stage, bounded, its output in the log, never fatal.
run() {
  local name="$1" limit="$2"; shift 2
  log "stage $name (limit ${limit}s): $*"
  printf '%s\n' "$*" >> "$OUT/commands.txt"
  local start=$SECONDS
  timeout --signal=TERM --kill-after=10 "$limit" "$@" >> "$LOG" 2>&1
  local code=$?
  log "stage $name: exit $code after $((SECONDS - start))s"
  return $code
}

log "gpu_roots.sh: DRY=${DRY:-0} device $DEVICE out $OUT"
"$PYTHON" - >> "$LOG" 2>&1 <<'PY' || true
import os, torch
print("torch", torch.__version__, "cuda", torch.cuda.is_available(),
      torch.cuda.get_device_name() if torch.cuda.is_available() else "-", "cpus", os.cpu_count())
PY

# 1. The recipe, chosen on validation splits only.
# shellcheck disable=SC2086
run choice "$T_CHOICE" "$PYTHON" benchmarks/root_recipe_choice.py --device "$DEVICE" \
  --candidates $CANDIDATES "${CHOICE_ARGS[@]}" --batch-size "$BATCH" --out "$OUT/choice"
CHOSEN="$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["chosen"])' \
  "$OUT/choice/choice.json" 2>/dev/null)" || CHOSEN=""
CHOSEN_BY="benchmarks/root_recipe_choice.py, validation splits only (choice/choice.json)"
if [ -z "$CHOSEN" ]; then
  CHOSEN="$FALLBACK"
  CHOSEN_BY="fallback: the choice stage left no choice.json (see log.txt)"
  log "no choice.json: falling back to $CHOSEN (say so on the card)"
fi
IFS=: read -r RECIPE CLASSES SIZE <<< "$CHOSEN"
if [ "${DRY:-0}" = "1" ]; then CLASSES=6; SIZE=8; fi
log "recipe $RECIPE, $CLASSES classes, VitCpu at $SIZE px"

# 2-3. The roots: the schedule (--minutes) fits 25 s + 10% under the stage's limit (start-up,
# the last checkpoint), --max-seconds ends training with a checkpoint 25 s before it, and
# checkpoints every $CKPT steps: a timeout still leaves root.safetensors + card.json.
pretrain_root() {
  local agent="$1" limit="$2" size="$3"
  local train=$((limit - 25)); [ "$train" -lt 5 ] && train=5
  local size_args=(); [ -n "$size" ] && size_args=(--image-size "$size")
  run "$agent" "$limit" "$PYTHON" -m munet pretrain --agent "$agent" --recipe "$RECIPE" \
    --classes "$CLASSES" "${size_args[@]}" --batch-size "$BATCH" \
    --minutes "$(awk "BEGIN{print 0.9 * $train / 60}")" --max-seconds "$train" \
    --checkpoint-every "$CKPT" --device "$DEVICE" --no-progress "${TINY[@]}" \
    --out "$OUT/$agent"
}
pretrain_root VitCpu "$T_VITCPU" "$SIZE"
T3_SIZE=""; [ "${DRY:-0}" = "1" ] && T3_SIZE=32
pretrain_root VitT3 "$T_VITT3" "$T3_SIZE"

# 4. Validation figures of the new VitCpu root against the shipped one, into its card.
if [ -f "$OUT/VitCpu/root.safetensors" ]; then
  run compare "$T_COMPARE" "$PYTHON" benchmarks/root_compare.py --agent VitCpu \
    --old munet/pretrain/roots/VitCpu.safetensors --new "$OUT/VitCpu/root.safetensors" \
    --device "$DEVICE" "${COMPARE_ARGS[@]}" --card "$OUT/VitCpu/card.json" \
    --json "$OUT/compare_VitCpu.json" || true
fi

# 5. Files as munet/pretrain/roots holds them.
for agent in VitCpu VitT3; do
  if [ -f "$OUT/$agent/root.safetensors" ] && [ -f "$OUT/$agent/card.json" ]; then
    cp "$OUT/$agent/root.safetensors" "$OUT/$agent.safetensors"
    "$PYTHON" - "$OUT/$agent/card.json" "$OUT/$agent.json" "$CHOSEN" "$CHOSEN_BY" >> "$LOG" 2>&1 <<'PY'
import json, sys
card = json.load(open(sys.argv[1]))
card["recipe_choice"] = {"chosen": sys.argv[3], "by": sys.argv[4]}
json.dump(card, open(sys.argv[2], "w"), indent=1)
print(f"{sys.argv[2]}: {card['steps']}/{card['planned_steps']} steps, {card['seconds']} s, "
      f"{card['device']} {card['precision']}, held-out {card['val_accuracy']}")
PY
    log "$agent: $(tail -n 1 "$LOG")"
  else
    log "$agent: no root written"
  fi
done
# Keep what comes back small: the resumable states stay on the machine.
rm -f "$OUT"/*/state-*.safetensors
log "done; files: $(cd "$OUT" && ls | tr '\n' ' ')"
