"""prepbench's own scaling from 1 to T threads, online and materializing.
"""
import statistics

from pipelines import WORKLOADS
from stack_prepbench import prepbench_row, run_prepbench



# CPU-bound strategies (everything online from the raw files), and the strategies whose
# materialization is timed (the most offline work each workload stores).
SCALING_ONLINE = [("cv", "unprocessed"), ("mp3", "unprocessed"), ("flac", "unprocessed"),
                  ("nlp", "unprocessed")]
SCALING_OFFLINE = [("cv", "resized"), ("mp3", "spectrogram-encoded"),
                   ("flac", "spectrogram-encoded"), ("nlp", "bpe-encoded")]


def scaling_table(binary, work, args, runs):
    """prepbench at 1 and T threads, alternating: online throughput (warm) of the CPU-bound
    strategies and materialization time (`--rematerialize`) of stored ones."""
    top = args.threads
    speedups = []
    lines = [
        "",
        f"prepbench's own scaling, 1 -> {top} threads (medians of {args.repeats} alternating "
        "runs; online: warm epochs of the strategies with every step online, in samples/s; "
        "offline: materializing the strategy again, in samples/s of offline time):",
        "",
        f"| workload | strategy | phase | 1 thread | {top} threads | speedup |",
        "|---|---|---|---|---|---|",
    ]
    for phase, cells in (("online", SCALING_ONLINE), ("offline", SCALING_OFFLINE)):
        for workload, strategy in cells:
            samples = getattr(args, WORKLOADS[workload]["samples"])
            values = {1: [], top: []}
            for repeat in range(args.repeats):
                for threads in (1, top):
                    if phase == "online":
                        sps = run_prepbench(binary, work, workload, strategy, samples, threads)
                    else:
                        row = prepbench_row(binary, work, workload, strategy, samples, threads,
                                            "warm", ["--rematerialize"])
                        sps = samples / row["offline_s"]
                    values[threads].append(sps)
                    runs.append((workload, f"{strategy} {phase}", "prepbench", repeat, threads,
                                 samples, sps))
            one, many = statistics.median(values[1]), statistics.median(values[top])
            speedups.append(many / one)
            print(f"scaling {workload:8} {strategy:20} {phase:8} {one:8.1f} -> {many:8.1f} "
                  f"samples/s ({many / one:.2f}x)", flush=True)
            lines.append(f"| {workload} | {strategy} | {phase} | {one:.0f} | {many:.0f} | "
                         f"{many / one:.2f}x |")
    return lines
