#!/usr/bin/env bash
# num_workers answered on a many-core machine, in one short run: the paper's CV chain (prepbench's
# own steps; under torch in their torchvision form) swept over both loaders and 1, 2, 4, 8, 16
# threads / num_workers, STRATEGIES (default `unprocessed,resized`), cold epochs sized to
# MIN_EPOCH_S (default 1) at the largest count (or SAMPLES samples where set), TRIALS (default 3)
# trials, verified; then `recommend` (the worker
# count each loader needs) and `compare --across loader`. Then, while the time lasts, SPDL and
# the bare DataLoader on the Pillow/NumPy chain of examples/my-photos at SPDL_WORKERS (default
# 8,16) (`pip install spdl`; skipped, saying so, where the interpreter lacks it).
#
# The sweep runs under `timeout SWEEP_S` (default 420): it resumes where it stopped, so a run
# cut short still leaves every finished cell in runs.csv, and the report is written of what is
# there. Needs a built prepbench and its Python module (PREPBENCH, PREPBENCH_NATIVE; default
# target/release/) and a python3 with torch and torchvision (PYTHON). Writes OUT (default
# results/local/loaders-scaling): machine.txt, log.txt, cv.tar.gz (the sweep's results folder,
# with report.md, recommend.md and compare.md in it), recommend.md, compare.md and spdl.txt.
#
#   OUT=/tmp/ls THREADS=1,2,4,8,16 scripts/peers/loaders_scaling.sh
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${PREPBENCH:-$repo/target/release/prepbench}
out=${OUT:-$repo/results/local/loaders-scaling}
python=${PYTHON:-python3}
threads=${THREADS:-1,2,4,8,16}
trials=${TRIALS:-3}
min_epoch_s=${MIN_EPOCH_S:-1}
sweep_s=${SWEEP_S:-420}
total_s=${TOTAL_S:-540}
strategies=${STRATEGIES:-unprocessed,resized}
# A fixed epoch instead of the one sized at the largest count (which, for `unprocessed`, makes
# one-worker epochs under torch last most of a minute).
sizing=(--min-epoch-s "$min_epoch_s")
[ -n "${SAMPLES:-}" ] && sizing=(--samples "$SAMPLES" --no-calibrate)
spdl_workers=${SPDL_WORKERS:-8,16}
spdl_samples=${SPDL_SAMPLES:-3000}
export PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH}
export PREPBENCH_NATIVE=${PREPBENCH_NATIVE:-$repo/target/release/lib_native.so}
began=$(date +%s)
. "$repo/scripts/peers/_loaders_common.sh"
work_folder loaders-scaling
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
machine_facts

cd "$work" || exit 1
start=$(date +%s)
timeout "$sweep_s" "$bin" --python "$python" sweep cv --loaders native,torch --verify \
  --strategies "$strategies" --threads "$threads" "${sizing[@]}" \
  --cache cold --trials "$trials" --epochs 1 --data-dir "$work/data" --store-dir "$work/stores" \
  --quiet --out "$work/cv"
echo "sweep cv ($strategies), native and torch at $threads: rc $? after $(( $(date +%s) - start )) s"
"$bin" report "$work/cv" --quiet
"$bin" recommend "$work/cv" > "$work/cv/recommend.md"
"$bin" compare "$work/cv" "$work/cv" --across loader --values native,torch > "$work/cv/compare.md"
cp "$work/cv/recommend.md" "$work/cv/compare.md" "$out/"
tar -czf "$out/cv.tar.gz" -C "$work" cv

if ! "$python" -c 'import spdl.io, spdl.pipeline' 2>/dev/null; then
  echo "SPDL: not installed in $python (pip install spdl)"
  exit 0
fi
data=$work/photos
"$bin" generate imagenet --samples "$spdl_samples" --out "$data" --quiet
for w in ${spdl_workers//,/ }; do
  for peer in torch module spdl; do
    if [ $(( $(date +%s) - began )) -gt "$total_s" ]; then
      echo "out of time before $peer at $w workers"
      exit 0
    fi
    args=(--data "$data/train" --module "$repo/examples/my-photos/my_pipeline.py"
      --steps decode,resize,normalize,random_crop --workers "$w" --trials "$trials" --epochs 2
      --samples "$spdl_samples")
    start=$(date +%s)
    echo "# $peer, $w workers" >> "$out/spdl.txt"
    if [ "$peer" = torch ]; then
      "$python" "$repo/scripts/peers/torch_bare.py" "${args[@]}" >> "$out/spdl.txt"
    else
      "$python" "$repo/scripts/peers/spdl_bare.py" "${args[@]}" --decode "$peer" >> "$out/spdl.txt"
    fi
    echo "$peer at $w workers: rc $? after $(( $(date +%s) - start )) s"
  done
done
