"""A PyTorch-DataLoader-style Python loader: a process pool running each sample's steps in a
worker, arrays pickled back to the consumer.
"""
import os
import time

from pipelines import FFT, WORKLOADS, cached, embedding_table, offline_stages, r50k, read_bytes



def py_item(task):
    """One sample in a worker process, as a DataLoader worker's __getitem__."""
    import numpy as np

    workload, strategy, path, index = task
    pipeline = WORKLOADS[workload]["pipeline"]
    stored, online = offline_stages(pipeline, strategy)
    x = np.load(path) if stored else read_bytes(path)
    for stage in online:
        x = pipeline.py_stage(stage, x)
    return pipeline.py_tail(x, np.random.default_rng(index))


def py_warm_up(text):
    """Imports each worker's libraries and builds its per-process state (the BPE encoder and
    embedding table when `text`) before timing, as a DataLoader's workers are started once."""
    import librosa
    import numpy as np
    import soundfile  # noqa: F401
    from PIL import Image as _  # noqa: F401

    # librosa's first STFT takes about a second (lazy imports, FFT set-up).
    librosa.stft(np.zeros(4096, np.float32), n_fft=FFT, center=False)

    if text:
        cached("bpe", r50k)
        cached("table", embedding_table)
    time.sleep(0.5)  # so that every worker takes one task
    return os.getpid()


def py_materialize(pipeline, strategy, files, folder):
    import numpy as np

    stored, _ = offline_stages(pipeline, strategy)
    os.makedirs(folder, exist_ok=True)
    out = []
    for i, f in enumerate(files):
        x = read_bytes(f)
        for stage in stored:
            x = pipeline.py_stage(stage, x)
        path = os.path.join(folder, f"{i:06d}.npy")
        np.save(path, x)
        out.append(path)
    return out


def run_py(pool, workload, strategy, paths):
    tasks = [(workload, strategy, p, i) for i, p in enumerate(paths)]
    start = time.perf_counter()
    n = 0
    for sample in pool.imap(py_item, tasks, chunksize=4):
        sample.flat[0]
        n += 1
    return n / (time.perf_counter() - start)
