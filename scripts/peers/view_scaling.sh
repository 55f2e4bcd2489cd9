#!/usr/bin/env bash
# Emulated storage under PyTorch's DataLoader on a many-core machine, in one short run. Under a
# loader in a process of its own, `--storage` serves the loader a FUSE view of the raw files and
# the store (docs/decisions.md); on 2 cores its cost could not be told from the loader's. Here:
#
#   view:  the torch loader reading the paper's CV chain cold directly (`local`) and through a
#          view that emulates nothing (a profile of `cpu_ms_per_mb: 0.000001`: mounted, nothing
#          delayed), at VIEW_THREADS (default 4,16) workers; `unprocessed` over UNPROCESSED
#          (default 4000) generated JPEGs, `resized` from a store of RESIZED (default 10000)
#          records. What the view costs a DataLoader when many workers read through it at once.
#   ceph:  prepbench's reader and the torch loader under `paper-ceph-hdd` at the paper's 8
#          threads, `unprocessed` over CEPH (default 1000) JPEGs: the same profile through the
#          reader's own throttle and through the view, at the concurrency the profile's
#          aggregate limits are about.
#   native: prepbench's reader, `unprocessed`, at 16 threads over UNPROCESSED JPEGs, the pair
#          for the view sweep's `local` torch cell (all-counts' native epochs at 16 were 0.98 s).
#
# PARTS (default view-unprocessed,view-resized,ceph,native) names the sweeps to run.
# Where FUSE cannot be mounted, `view` and the torch half of `ceph` are refused before they run
# and say so; `native` runs regardless. Each sweep runs under its own `timeout` (VIEW_S, CEPH_S,
# NATIVE_S seconds) and resumes where it stopped, so a cut run still leaves its finished cells.
# TRIALS (default 3) cold trials a cell. Needs a built prepbench and its Python module
# (PREPBENCH, PREPBENCH_NATIVE; default target/release/) and a python3 with torch and
# torchvision (PYTHON). Writes OUT (default results/local/view-scaling): machine.txt, log.txt
# and a tarball of each results folder (report.md, compare.md and recommend.md in each).
#
#   OUT=/tmp/vs scripts/peers/view_scaling.sh
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${PREPBENCH:-$repo/target/release/prepbench}
out=${OUT:-$repo/results/local/view-scaling}
python=${PYTHON:-python3}
trials=${TRIALS:-3}
view_threads=${VIEW_THREADS:-4,16}
unprocessed=${UNPROCESSED:-4000}
resized=${RESIZED:-10000}
ceph=${CEPH:-1000}
view_s=${VIEW_S:-260}
ceph_s=${CEPH_S:-100}
native_s=${NATIVE_S:-60}
parts=,${PARTS:-view-unprocessed,view-resized,ceph,native},
export PYTHONPATH=$repo/python${PYTHONPATH:+:$PYTHONPATH}
export PREPBENCH_NATIVE=${PREPBENCH_NATIVE:-$repo/target/release/lib_native.so}
. "$repo/scripts/peers/_loaders_common.sh"
work_folder view-scaling
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
machine_facts
{
  echo "/dev/fuse: $(ls -l /dev/fuse 2>&1)"
  echo "fusermount3: $(command -v fusermount3 || echo none)"
} | tee -a "$out/machine.txt"

cd "$work" || exit 1
# The CV workload with one more profile: a view mounted, nothing delayed.
sed 's/^name: cv$/name: cv-view/' "$repo/workloads/defs/cv.yaml" > cv-view.yaml
printf 'storage_profiles:\n  view: {description: a FUSE view that delays nothing, cpu_ms_per_mb: 0.000001}\n' \
  >> cv-view.yaml
common=(--cache cold --trials "$trials" --epochs 1 --no-calibrate --data-dir "$work/data"
  --store-dir "$work/stores" --quiet)
sweep() { # folder, seconds, sweep arguments...
  local folder=$1 limit=$2 start
  shift 2
  [[ $parts == *,$folder,* ]] || return 0
  start=$(date +%s)
  timeout "$limit" "$bin" --python "$python" sweep "$@" "${common[@]}" --out "$work/$folder"
  echo "$folder $*: rc $? after $(( $(date +%s) - start )) s"
}
sweep view-unprocessed "$((view_s * 6 / 10))" cv-view.yaml --loaders torch --storage local,view \
  --strategies unprocessed --threads "$view_threads" --samples "$unprocessed"
sweep view-resized "$((view_s * 4 / 10))" cv-view.yaml --loaders torch --storage local,view \
  --strategies resized --threads "$view_threads" --samples "$resized"
sweep ceph "$ceph_s" cv --loaders native,torch --storage paper-ceph-hdd \
  --strategies unprocessed --threads 8 --samples "$ceph"
sweep native "$native_s" cv --loaders native --strategies unprocessed --threads 16 \
  --samples "$unprocessed"

for folder in view-unprocessed view-resized ceph native; do
  [ -f "$work/$folder/runs.csv" ] || continue
  "$bin" report "$work/$folder" --quiet
  case $folder in
    view-*) "$bin" compare "$work/$folder" "$work/$folder" --across storage \
              --values local,view > "$work/$folder/compare.md" ;;
    ceph) "$bin" compare "$work/$folder" "$work/$folder" --across loader \
            --values native,torch > "$work/$folder/compare.md" ;;
  esac
  tar -czf "$out/$folder.tar.gz" -C "$work" "$folder"
done
echo "done after $SECONDS s"
