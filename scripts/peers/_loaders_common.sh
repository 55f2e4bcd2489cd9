# Shared by the peers scripts that measure loaders (loaders.sh, loaders_scaling.sh,
# workers_scaling.sh); sourced,
# with `repo`, `out` and `python` set.

# `work`: $WORK when set, else a fresh folder under /tmp named after $1, removed at exit.
work_folder() {
  if [ -z "${WORK:-}" ]; then
    work=$(mktemp -d "/tmp/prepbench-$1.XXXXXX")
    trap 'rm -rf "$work"' EXIT
  else
    work=$WORK
  fi
}

# The date, commit, machine and the loaders' Python packages, into $out/machine.txt and the log.
machine_facts() {
  {
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "nproc: $(nproc)"
    uname -a
    grep -m1 'model name' /proc/cpuinfo
    free -g | head -2
    df -h "$work" | tail -1
    "$python" -c 'import sys, torch, torchvision, numpy, PIL; print("python", sys.version.split()[0], "torch", torch.__version__, "torchvision", torchvision.__version__, "numpy", numpy.__version__, "pillow", PIL.__version__)'
    "$python" -c 'import spdl.io; print("spdl", getattr(spdl.io, "__version__", "installed"))' 2>/dev/null || echo "spdl: not installed"
  } > "$out/machine.txt" 2>&1
  cat "$out/machine.txt"
}
