#!/bin/bash
# A prepbench sweep as a Slurm job array: each array task runs one shard of the sweep
# (prepbench reads SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT), then the last step merges
# them. Submit from the repository root, with the results folder on storage every node sees:
#
#   sbatch --array=0-3 scripts/cluster/slurm-sweep.sh cv /shared/prepbench/cv-sweep
#   # when all four tasks are done:
#   target/release/prepbench merge /shared/prepbench/cv-sweep
#   target/release/prepbench report /shared/prepbench/cv-sweep
#
# Or let Slurm run the merge after the array (afterok):
#
#   jid=$(sbatch --parsable --array=0-3 scripts/cluster/slurm-sweep.sh cv /shared/cv-sweep)
#   sbatch --dependency=afterok:$jid --wrap "target/release/prepbench merge /shared/cv-sweep"
#
# Each task needs its own node's cores: ask for them with --cpus-per-task (the sweep's largest
# thread count). The array must be numbered without gaps (--array=0-N-1 or 1-N; a step other
# than 1 is refused). Datasets are generated deterministically, so tasks sharing --data-dir
# write the same bytes; generating once beforehand (`prepbench generate`) saves the work.
#SBATCH --job-name=prepbench-sweep
#SBATCH --cpus-per-task=8
#SBATCH --exclusive
#SBATCH --output=prepbench-sweep-%A_%a.out
set -euo pipefail

workload=${1:?usage: sbatch --array=0-N scripts/cluster/slurm-sweep.sh WORKLOAD OUT [sweep options...]}
out=${2:?usage: sbatch --array=0-N scripts/cluster/slurm-sweep.sh WORKLOAD OUT [sweep options...]}
shift 2
# Stores stay on the node's local disk unless PREPBENCH_STORE says otherwise: each shard
# materializes only the stores its cells read.
store=${PREPBENCH_STORE:-${TMPDIR:-/tmp}/prepbench-store-$SLURM_ARRAY_JOB_ID-$SLURM_ARRAY_TASK_ID}
exec target/release/prepbench sweep "$workload" --out "$out" --store-dir "$store" --quiet "$@"
