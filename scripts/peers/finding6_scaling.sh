#!/usr/bin/env bash
# Finding 6 on a many-core machine, in one short run: the paper's two sides of thread scaling,
# MP3 `decoded` (the spectrogram online: CPU-bound), FLAC `decoded` (the same steps, the other
# audio pipeline 6a and 6c are about) and NILM `aggregated` (tiny samples), swept
# at 1, 2, 4, 8, 16 threads with prepbench's own engine, cold epochs of at least MIN_EPOCH_S
# (default 1) at the most threads, TRIALS (default 3) trials; then, while the time lasts, MP3
# `decoded` under PyTorch's DataLoader at the same worker counts (its online steps are torch
# arithmetic: no audio decoder needed). `prepbench report` of the folder judges 6a, 6b and 6c,
# the claim the 2-core VM cannot test (8 threads on 8 or more cores).
#
# PARTS (default mp3,nilm,torch; flac too where named) names the sweeps to run, in the order
# mp3, nilm, flac, torch. Each runs under its own `timeout` (MP3_S, NILM_S, FLAC_S, TORCH_S
# seconds): a sweep resumes where it stopped, so a cut run still leaves its finished cells in
# runs.csv, and the report is written of what is there. Needs a built prepbench and its Python
# module (PREPBENCH, PREPBENCH_NATIVE; default target/release/) and, for the torch part, a
# python3 with torch (PYTHON). Writes OUT (default results/local/finding6-scaling): machine.txt, log.txt,
# finding6.tar.gz (the results folder, report.md and recommend.md in it), report.md and
# recommend.md.
#
#   OUT=/tmp/f6 THREADS=1,2,4,8,16 scripts/peers/finding6_scaling.sh
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${PREPBENCH:-$repo/target/release/prepbench}
out=${OUT:-$repo/results/local/finding6-scaling}
python=${PYTHON:-python3}
threads=${THREADS:-1,2,4,8,16}
trials=${TRIALS:-3}
min_epoch_s=${MIN_EPOCH_S:-1}
mp3_s=${MP3_S:-200}
nilm_s=${NILM_S:-150}
flac_s=${FLAC_S:-200}
torch_s=${TORCH_S:-120}
parts=,${PARTS:-mp3,nilm,torch},
export PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH}
export PREPBENCH_NATIVE=${PREPBENCH_NATIVE:-$repo/target/release/lib_native.so}
. "$repo/scripts/peers/_loaders_common.sh"
work_folder finding6
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
machine_facts

cd "$work" || exit 1
results=$work/finding6
common=(--threads "$threads" --min-epoch-s "$min_epoch_s" --cache cold --trials "$trials"
  --epochs 1 --data-dir "$work/data" --store-dir "$work/stores" --quiet --out "$results")
sweep() { # part, seconds, label, sweep arguments...
  local part=$1 limit=$2 label=$3 start
  shift 3
  [[ $parts == *,$part,* ]] || return 0
  start=$(date +%s)
  timeout "$limit" "$bin" --python "$python" sweep "$@" "${common[@]}"
  echo "$label: rc $? after $(( $(date +%s) - start )) s"
}
sweep mp3 "$mp3_s" "mp3 decoded, native" mp3 --strategies decoded
sweep nilm "$nilm_s" "nilm aggregated, native" nilm --strategies aggregated
sweep flac "$flac_s" "flac decoded, native" flac --strategies decoded
sweep torch "$torch_s" "mp3 decoded, torch" mp3 --strategies decoded --loaders torch
"$bin" report "$results" --quiet
"$bin" recommend "$results" > "$results/recommend.md"
cp "$results/report.md" "$results/recommend.md" "$out/"
tar -czf "$out/finding6.tar.gz" -C "$work" finding6
