#!/bin/bash
# A/B of the free page reporter on NILM cold epochs: keep, hold, keep, hold, one sweep each,
# each into its own results folder, the dataset and store folders shared (about 12 GB under
# $WORK). Run as root on a VM with free page reporting, from the repository's root; then copy
# each $WORK/out-*/runs.csv and manifest.json here and run summarize.py.
W=${WORK:-/tmp/page-reporting-ab}; mkdir -p $W
B=${PREPBENCH:-target/release/prepbench}
for i in 1 2 3 4; do
  if [ $((i % 2)) = 1 ]; then p=keep; else p=hold; fi
  echo "$(date -u +%H:%M:%S) sweep $i $p order=$(cat /sys/module/page_reporting/parameters/page_reporting_order)"
  $B sweep nilm --strategies unprocessed,decoded,aggregated --threads 1,2 --cache cold --epochs 1 \
    --trials 5 --min-epoch-s 1 --shards 16 --page-reporting $p \
    --out $W/out-$i-$p --data-dir $W/data --store-dir $W/store > $W/log-$i-$p 2>&1
  echo "$(date -u +%H:%M:%S) rc=$?"
done
rm -rf $W/data $W/store
