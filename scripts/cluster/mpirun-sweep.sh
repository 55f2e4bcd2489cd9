#!/bin/bash
# A prepbench sweep over MPI ranks: every rank runs one shard of the sweep (prepbench reads
# OMPI_COMM_WORLD_RANK/SIZE under Open MPI, PMI_RANK/SIZE under MPICH and Intel MPI), then the
# shards are merged and reported. Run from the repository root, with OUT on storage every host
# sees, e.g. on two hosts with one rank each:
#
#   scripts/cluster/mpirun-sweep.sh -np 2 --host node1,node2 -- cv /shared/prepbench/cv-sweep
#
# Options before `--` go to mpirun; after it come the workload, the results folder and any
# sweep options (--threads 1,2,4,8 --trials 5 ...). One rank per host measures that host; two
# ranks on one host share its cores and disk and measure each other's interference.
set -euo pipefail

mpi=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    mpi+=("$1")
    shift
done
[ "${1:-}" = "--" ] || { echo "usage: $0 MPIRUN-OPTIONS -- WORKLOAD OUT [sweep options]" >&2; exit 2; }
shift
workload=${1:?workload}
out=${2:?results folder}
shift 2
prepbench=target/release/prepbench
mpirun "${mpi[@]}" "$prepbench" sweep "$workload" --out "$out" --quiet "$@"
"$prepbench" merge "$out"
"$prepbench" report "$out"
