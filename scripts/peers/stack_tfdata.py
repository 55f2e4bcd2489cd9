"""tf.data, the paper's stack: the same pipelines as TensorFlow ops (and tf.numpy_function where
TensorFlow has no op), over the files or TFRecords of serialized tensors.
"""
import time

from pipelines import CACHE, embedding_table, offline_stages



def tf_setup(threads, text):
    import tensorflow as tf

    tf.config.threading.set_inter_op_parallelism_threads(threads)
    tf.config.threading.set_intra_op_parallelism_threads(1)
    if text:
        CACHE["tf-table"] = tf.Variable(embedding_table(), trainable=False)
    return tf


def tf_options(tf, threads):
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads
    options.deterministic = False
    return options


def tf_materialize(tf, pipeline, strategy, files, path):
    stored, _ = offline_stages(pipeline, strategy)
    with tf.io.TFRecordWriter(path) as writer:
        for f in files:
            x = tf.io.read_file(f)
            for stage in stored:
                x = pipeline.tf_stage(tf, stage, x)
            writer.write(tf.io.serialize_tensor(x).numpy())


def tf_dataset(tf, pipeline, strategy, files, records, threads):
    stored, online = offline_stages(pipeline, strategy)

    def rest(x):
        for stage in online:
            x = pipeline.tf_stage(tf, stage, x)
        return pipeline.tf_tail(tf, x)

    if strategy == "unprocessed":
        ds = tf.data.Dataset.from_tensor_slices(files).map(
            lambda f: rest(tf.io.read_file(f)), num_parallel_calls=threads)
    else:
        dtype = pipeline.tf_dtype(tf, stored[-1])
        ds = tf.data.TFRecordDataset(records, num_parallel_reads=threads).map(
            lambda r: rest(tf.io.parse_tensor(r, dtype)), num_parallel_calls=threads)
    return ds.prefetch(threads * 4).with_options(tf_options(tf, threads))


def run_tf(ds):
    """One epoch over a tf.data dataset built once (as a training loop iterates it)."""
    start = time.perf_counter()
    n = 0
    for sample in ds:
        sample.numpy().flat[0]
        n += 1
    return n / (time.perf_counter() - start)
