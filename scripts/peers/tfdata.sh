#!/usr/bin/env bash
# The tf-data loader measured, in one short run: the paper's CV chain on generated
# ImageNet-style JPEGs.
#  1. Overhead: `prepbench sweep cv --loaders tf-data` of `unprocessed`, warm, against the same
#     pipeline written bare in tf.data (scripts/peers/tfdata_bare.py) on the same files, at
#     THREADS (default 2) threads, TRIALS x EPOCHS epochs each.
#  2. The paper on its own stack beside prepbench's engine: `sweep cv --loaders native,tf-data
#     --verify` of every strategy, cold, epochs sized to MIN_EPOCH_S (default 2).
#  3. The same overhead on a store (`store`): CV `resized` read by TFRecordDataset, parsed,
#     centred and cropped; and on audio (`audio`): MP3 `unprocessed` to log-mel.
#  4. The paper's NLP pipeline (`nlp`, not in the default PARTS): `sweep nlp --loaders
#     native,tf-data --verify` of every strategy, cold, as `cv` (extraction and BPE per record
#     in Python under tf-data, as the paper's stack ran extraction), and its ranking per loader.
# Trials of the loader and the bare pipeline alternate, one process each.
# PARTS (default overhead,store,cv) picks which of them run.
# Needs a built prepbench and its Python module (PREPBENCH, PREPBENCH_NATIVE) and a python3
# with TensorFlow (PYTHON). Writes OUT (default results/local/tfdata): machine.txt, log.txt,
# bare*.txt and overhead-WORKLOAD-STRATEGY/ per part, and cv/, nlp/ (results folders).
#
#   OUT=/tmp/tfdata SAMPLES=600 THREADS=2 PYTHON=.venv/bin/python scripts/peers/tfdata.sh
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${PREPBENCH:-$repo/target/release/prepbench}
out=${OUT:-$repo/results/local/tfdata}
python=${PYTHON:-python3}
threads=${THREADS:-2}
samples=${SAMPLES:-600}
trials=${TRIALS:-3}
epochs=${EPOCHS:-2}
min_epoch_s=${MIN_EPOCH_S:-2}
# AUTOTUNE=false: tf.data's autotuning off in both the loader and the bare pipeline.
autotune=${AUTOTUNE:-true}
loader_options=() bare_options=()
if [[ $autotune == false ]]; then
  loader_options=(--loader-options autotune=false) bare_options=(--no-autotune)
fi
parts=${PARTS:-overhead,store,audio,cv}
export PYTHONPATH=$repo/python
export PREPBENCH_NATIVE=${PREPBENCH_NATIVE:-$repo/target/release/lib_native.so}
work=$(mktemp -d /tmp/prepbench-tfdata.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
{
  echo "date: $(date -u +%FT%TZ)"
  echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "nproc: $(nproc)"
  grep -m1 'model name' /proc/cpuinfo
  "$python" -c 'import sys, tensorflow as tf, numpy; print("python", sys.version.split()[0], "tensorflow", tf.__version__, "numpy", numpy.__version__)' 2>/dev/null
} > "$out/machine.txt"
cat "$out/machine.txt"
data=$work/data/imagenet-seed0
"$bin" generate imagenet --samples "$samples" --out "$data" --quiet

# prepbench's tf-data loader against the same pipeline written bare, trial by trial in turn (one
# process each), so that a drift of the machine falls on both: `$1` the workload, `$2` the
# strategy (its results folder is $out/overhead-WORKLOAD-STRATEGY), `$3` the bare pipeline's
# text file, then the bare script's input flag and path (`--store` alone: the strategy's store).
overhead() {
  local workload=$1 strategy=$2 text=$3
  shift 3
  : > "$out/$text"
  for ((t = 1; t <= trials; t++)); do
    local start=$(date +%s)
    "$bin" --python "$python" sweep "$workload" --loaders tf-data "${loader_options[@]}" --strategies "$strategy" \
      --threads "$threads" --cache warm --trials "$t" --epochs "$epochs" --samples "$samples" \
      --no-calibrate --data-dir "$work/data" --store-dir "$work/stores" --quiet \
      --out "$out/overhead-$workload-$strategy"
    echo "prepbench tf-data loader, $workload $strategy, trial $t: rc $? after $(( $(date +%s) - start )) s"
    start=$(date +%s)
    local input=("$@")
    [[ ${input[0]} == --store ]] && input=(--store "$(ls -d "$work/stores/$workload/$strategy"/*/ | head -1)")
    "$python" "$repo/scripts/peers/tfdata_bare.py" "${input[@]}" "${bare_options[@]}" --threads "$threads" \
      --trials 1 --first-trial $((t - 1)) --epochs "$epochs" --samples "$samples" >> "$out/$text"
    echo "bare tf.data, $workload $strategy, trial $t: rc $? after $(( $(date +%s) - start )) s"
  done
}

# CV `unprocessed`: the JPEG files read, decoded, resized, centred and cropped.
[[ ,$parts, == *,overhead,* ]] && overhead cv unprocessed bare.txt --data "$data/train"
# CV `resized`: the store's records read by TFRecordDataset, parsed, centred and cropped.
[[ ,$parts, == *,store,* ]] && overhead cv resized bare-store.txt --store
# MP3 `unprocessed`: the clips read, decoded by tensorflow-io, made log-mel by tf.signal.
if [[ ,$parts, == *,audio,* ]]; then
  "$bin" generate commonvoice --samples "$samples" --out "$work/data/commonvoice-seed0" --quiet
  overhead mp3 unprocessed bare-audio.txt --audio "$work/data/commonvoice-seed0/clips"
fi

if [[ ,$parts, == *,cv,* ]]; then
start=$(date +%s)
"$bin" --python "$python" sweep cv --loaders native,tf-data --verify \
  --strategies unprocessed,concatenated,decoded,resized,pixel-centered --threads "$threads" \
  --min-epoch-s "$min_epoch_s" --cache cold --trials "$trials" --epochs 1 \
  --data-dir "$work/data" --store-dir "$work/stores" --quiet --out "$out/cv"
echo "the paper's cv, native and tf-data, cold: rc $? after $(( $(date +%s) - start )) s"
"$bin" compare "$out/cv" "$out/cv" --across loader --values native,tf-data > "$out/cv/compare.md"
"$bin" recommend "$out/cv" > "$out/cv/recommend.md"
fi

if [[ ,$parts, == *,nlp,* ]]; then
start=$(date +%s)
"$bin" --python "$python" sweep nlp --loaders native,tf-data --verify \
  --threads "$threads" --min-epoch-s "$min_epoch_s" --cache cold --trials "$trials" --epochs 1 \
  --data-dir "$work/data" --store-dir "$work/stores" --quiet --out "$out/nlp"
echo "the paper's nlp, native and tf-data, cold: rc $? after $(( $(date +%s) - start )) s"
"$bin" report "$out/nlp" --quiet
"$bin" compare "$out/nlp" "$out/nlp" --across loader --values native,tf-data > "$out/nlp/compare.md"
"$bin" recommend "$out/nlp" > "$out/nlp/recommend.md"
fi
