#!/usr/bin/env bash
# The torch loader measured, in one short run (for a many-core machine): the CV chain as a
# PyTorch user writes it in Pillow and NumPy (examples/my-photos: decode, resize the shorter
# side to 256, normalize, random 224 crop) over generated ImageNet-style JPEGs.
#  1. Overhead: `prepbench sweep --loaders torch` of `unprocessed` with warm epochs against the
#     same DataLoader written bare (scripts/peers/torch_bare.py) on the same files, at
#     WORKERS (default 8) workers, TRIALS x EPOCHS epochs each; with PERSISTENT=1, both with
#     persistent workers (one DataLoader a trial; `--loader-options persistent=true`).
#  2. How far the answer moves with the loader: `sweep --loaders native,torch` of every
#     strategy, cold epochs, at WORKERS threads / num_workers.
#  3. SPDL beside them (scripts/peers/spdl_bare.py, the same steps in an SPDL pipeline of
#     WORKERS threads, and with SPDL's own decode and resize), when the interpreter has it
#     (`pip install spdl`; said missing otherwise): spdl-module.txt, spdl-spdl.txt. SPDL's own
#     decoder loads FFmpeg's shared libraries (Debian 12: apt-get install libavdevice59).
#  4. The paper's CV chain (prepbench's own steps; under torch in their torchvision form),
#     `sweep cv --loaders native,torch` of every strategy, cold, verified: cv/.
# Epochs of steps 2 and 4 are sized to last MIN_EPOCH_S (default 2) from a calibration.
# Needs a built prepbench and its Python module (PREPBENCH, PREPBENCH_NATIVE; default
# target/release/prepbench and lib_native.so) and a python3 with torch and torchvision
# (PYTHON). Writes OUT (default results/local/loaders): machine.txt, log.txt, overhead/,
# loaders/ and cv/ (results folders), bare.txt and the SPDL files.
#
#   OUT=/tmp/loaders SAMPLES=1200 WORKERS=8 scripts/peers/loaders.sh
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
bin=${PREPBENCH:-$repo/target/release/prepbench}
out=${OUT:-$repo/results/local/loaders}
python=${PYTHON:-python3}
workers=${WORKERS:-8}
samples=${SAMPLES:-1200}
min_epoch_s=${MIN_EPOCH_S:-2}
trials=${TRIALS:-3}
epochs=${EPOCHS:-2}
strategies=${STRATEGIES:-unprocessed,concatenated,decoded,resized,normalized}
bare_persistent=() loader_persistent=()
if [ -n "${PERSISTENT:-}" ]; then
  bare_persistent=(--persistent) loader_persistent=(--loader-options persistent=true)
fi
export PYTHONPATH=$repo/python
export PREPBENCH_NATIVE=${PREPBENCH_NATIVE:-$repo/target/release/lib_native.so}
. "$repo/scripts/peers/_loaders_common.sh"
work_folder loaders
mkdir -p "$out"
exec > >(tee -a "$out/log.txt") 2>&1
machine_facts

data=$work/data/imagenet-seed0
"$bin" generate imagenet --samples "$samples" --out "$data" --quiet
sed "s|path: my-photos .*|path: $data/train|" "$repo/examples/my-photos/my-photos.yaml" > "$work/photos.yaml"
cp "$repo/examples/my-photos/my_pipeline.py" "$work/"
cd "$work" || exit 1
common=(--samples "$samples" --no-calibrate --store-dir "$work/stores" --quiet)

start=$(date +%s)
"$python" "$repo/scripts/peers/torch_bare.py" --data "$data/train" \
  --module "$work/my_pipeline.py" --steps decode,resize,normalize,random_crop \
  --workers "$workers" --trials "$trials" --epochs "$epochs" --samples "$samples" \
  "${bare_persistent[@]}" > "$out/bare.txt"
echo "bare DataLoader: rc $? after $(( $(date +%s) - start )) s"
start=$(date +%s)
"$bin" --python "$python" sweep "$work/photos.yaml" --loaders torch "${loader_persistent[@]}" \
  --strategies unprocessed \
  --threads "$workers" --cache warm --trials "$trials" --epochs "$epochs" "${common[@]}" \
  --out "$out/overhead"
echo "prepbench torch loader, warm: rc $? after $(( $(date +%s) - start )) s"

# Raw files cannot cycle over a folder: `unprocessed` reads the SAMPLES files, the stored
# strategies are sized to MIN_EPOCH_S.
start=$(date +%s)
"$bin" --python "$python" sweep "$work/photos.yaml" --loaders native,torch \
  --strategies unprocessed --threads "$workers" --cache cold --trials "$trials" --epochs 1 \
  "${common[@]}" --out "$out/loaders"
"$bin" --python "$python" sweep "$work/photos.yaml" --loaders native,torch \
  --strategies "${strategies#unprocessed,}" --threads "$workers" --min-epoch-s "$min_epoch_s" \
  --cache cold --trials "$trials" --epochs 1 --store-dir "$work/stores" --quiet \
  --out "$out/loaders"
echo "prepbench native and torch, cold: rc $? after $(( $(date +%s) - start )) s"

if "$python" -c 'import spdl.io, spdl.pipeline' 2>/dev/null; then
  for decode in module spdl; do
    start=$(date +%s)
    "$python" "$repo/scripts/peers/spdl_bare.py" --data "$data/train" --decode "$decode" \
      --module "$work/my_pipeline.py" --steps decode,resize,normalize,random_crop \
      --workers "$workers" --trials "$trials" --epochs "$epochs" --samples "$samples" \
      > "$out/spdl-$decode.txt"
    echo "SPDL ($decode decode): rc $? after $(( $(date +%s) - start )) s"
  done
else
  echo "SPDL: not installed in $python (pip install spdl)"
fi

start=$(date +%s)
"$bin" --python "$python" sweep cv --loaders native,torch --verify \
  --strategies unprocessed,concatenated,decoded,resized,pixel-centered --threads "$workers" \
  --min-epoch-s "$min_epoch_s" --cache cold --trials "$trials" --epochs 1 \
  --data-dir "$work/data" --store-dir "$work/stores" --quiet --out "$out/cv"
echo "the paper's cv, native and torch, cold: rc $? after $(( $(date +%s) - start )) s"
"$bin" compare "$out/cv" "$out/cv" --across loader --values native,torch > "$out/cv/compare.md"
"$bin" recommend "$out/cv" > "$out/cv/recommend.md"
"$bin" compare "$out/loaders" "$out/loaders" --across loader --values native,torch > "$out/loaders/compare.md"
"$bin" recommend "$out/loaders" > "$out/loaders/recommend.md"
