export PYTHONPATH=/work/main/python PREPBENCH_NATIVE=/work/main/target/release/lib_native.so
B=/work/main/target/release/prepbench
for p in "" 1; do
  bp=() lp=()
  [ -n "$p" ] && bp=(--persistent) lp=(--loader-options persistent=true)
  /usr/bin/python3 /work/main/scripts/peers/torch_bare.py --data data/train --module my_pipeline.py --steps decode,resize,normalize,random_crop --workers 2 --trials 3 --epochs 3 --samples 1200 "${bp[@]}" > ov-bare$p.txt
  $B --python /usr/bin/python3 sweep photos.yaml --loaders torch "${lp[@]}" --strategies unprocessed --threads 2 --cache warm --trials 3 --epochs 3 --samples 1200 --no-calibrate --store-dir /tmp/pw/stores --quiet --out /tmp/pw/ov$p
done
