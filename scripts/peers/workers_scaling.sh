#!/usr/bin/env bash
# Thread and num_workers scaling of the paper's CV pipeline on a many-core machine, in one short
# run: prepbench's own threads (`sweep cv` of `unprocessed` and `resized` at 1, 2, 4, 8, 16
# threads, 3 trials, epochs of at least 1 s) and PyTorch's DataLoader bare on the same generated
# JPEG files at the same worker counts (scripts/peers/torch_workers.py). Needs a built
# `prepbench` (PREPBENCH, default target/release/prepbench) and a python3 with torch and
# torchvision (PYTHON, default python3). Writes into OUT (default results/local/workers-scaling): machine.txt, log.txt,
# prepbench.tar.gz (the sweep's results folder; `prepbench report` it after unpacking) and
# torch/runs.csv, torch/summary.md.
#
#   OUT=/tmp/scaling WORKERS=1,2,4,8,16 scripts/peers/workers_scaling.sh
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${PREPBENCH:-$repo/target/release/prepbench}
out=${OUT:-$repo/results/local/workers-scaling}
workers=${WORKERS:-1,2,4,8,16}
trials=${TRIALS:-3}
python=${PYTHON:-python3}
. "$repo/scripts/peers/_loaders_common.sh"
work_folder scaling
mkdir -p "$out/torch"
exec > >(tee -a "$out/log.txt") 2>&1
machine_facts

cd "$work" || exit 1
start=$(date +%s)
"$bin" sweep cv --strategies unprocessed,resized --threads "$workers" --trials "$trials" \
  --min-epoch-s 1 --out "$work/prepbench-cv" --quiet
echo "prepbench sweep: rc $? after $(( $(date +%s) - start )) s"
tar -czf "$out/prepbench.tar.gz" -C "$work" prepbench-cv

start=$(date +%s)
"$python" "$repo/scripts/peers/torch_workers.py" --data "$work/data/imagenet-seed0" \
  --out "$out/torch" --work "$work/torch-work" --workers "$workers" --trials "$trials"
echo "torch DataLoader: rc $? after $(( $(date +%s) - start )) s"
