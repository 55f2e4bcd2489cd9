set -u
export PYTHONPATH=/work/main/python PREPBENCH_NATIVE=/work/main/target/release/lib_native.so
b=/work/main/target/release/prepbench
start=$(date +%s)
$b --python /usr/bin/python3 sweep cv --loaders native,torch --verify \
  --strategies unprocessed,concatenated,decoded,resized,pixel-centered --threads 2 \
  --min-epoch-s 2 --cache cold --trials 3 --epochs 1 --samples 600 \
  --data-dir /tmp/cvre/data --store-dir /tmp/cvre/stores --quiet --out /tmp/cvre/cv
echo "sweep rc $? after $(( $(date +%s) - start )) s"
$b compare /tmp/cvre/cv /tmp/cvre/cv --across loader --values native,torch > /tmp/cvre/cv/compare.md
$b recommend /tmp/cvre/cv > /tmp/cvre/cv/recommend.md
