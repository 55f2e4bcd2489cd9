//! The record store per codec and sample size (the paper's synthetic sizes, 0.01 MB to
//! 20.48 MB of float32): writing a shard (encode, frame, compress, write, sync) and reading it
//! back warm (read, decompress, check CRCs, decode to samples), in bytes per second, so finding
//! 5 (small samples read slower per byte) can be seen at the record level. Before the timed
//! runs it prints the heap allocations per record of a read pass, counted by a wrapping
//! allocator, to keep the reader's copies and allocations in view.
//! Run: `cargo bench -p harness --bench store -- --quick`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use harness::store::{ShardReader, ShardWriter};
use workloads::rng::SeededRng;
use workloads::{encoding, Codec, Field, Sample, Tensor, TensorData};

/// Counts allocations so a read pass can report them per record.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator; the counter has no effect
// on the memory handed out.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Sample sizes in MB: every third of the paper's twelve.
const SIZES_MB: [f64; 5] = [0.01, 0.08, 0.64, 5.12, 20.48];
const CODECS: [&str; 4] = ["none", "gzip", "zstd", "lz4"];
/// Bytes of samples per shard (at least three samples).
const SHARD_BYTES: usize = 24_000_000;

/// `count` samples of `mb` MB of uniform float32 in [-1, 1), as the synthetic datasets hold.
fn samples(mb: f64, count: usize) -> Vec<Sample> {
    let floats = (mb * 1e6 / 4.0) as usize;
    let mut rng = SeededRng::new(5);
    (0..count)
        .map(|id| {
            let data: Vec<f32> = (0..floats)
                .map(|_| rng.range_f64(-1.0, 1.0) as f32)
                .collect();
            let tensor = Tensor::new(vec![floats], TensorData::F32(data)).expect("1-D");
            Sample::new(id as u64).with("data", Field::Tensor(tensor))
        })
        .collect()
}

fn write_shard(dir: &Path, codec: Codec, samples: &[Sample]) -> std::path::PathBuf {
    let mut writer = ShardWriter::create(dir, 0, 1, codec).expect("shard");
    let mut payload = Vec::new();
    for s in samples {
        payload.clear();
        encoding::encode_into(s, &mut payload);
        writer.write(&payload).expect("write");
    }
    let info = writer.finish().expect("finish");
    dir.join(info.file)
}

/// Reads every record and decodes it; returns the records read.
fn read_shard(path: &Path, codec: Codec) -> usize {
    let mut reader = ShardReader::open(path, codec).expect("open");
    let mut payload = Vec::new();
    let mut n = 0;
    while reader.next_into(&mut payload).expect("read") {
        let sample = encoding::decode(&payload).expect("decode");
        std::hint::black_box(&sample);
        n += 1;
    }
    n
}

fn store(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    for mb in SIZES_MB {
        let count = ((SHARD_BYTES as f64 / (mb * 1e6)) as usize).max(3);
        let data = samples(mb, count);
        let bytes = (mb * 1e6) as u64 * count as u64;
        let mut group = c.benchmark_group(format!("store/{mb}MB"));
        group.throughput(Throughput::Bytes(bytes));
        group.sample_size(10);
        for name in CODECS {
            let codec: Codec = name.parse().expect("codec");
            let shard_dir = dir.path().join(format!("{mb}-{name}"));
            std::fs::create_dir_all(&shard_dir).expect("dir");
            group.bench_with_input(BenchmarkId::new("write", name), &data, |b, data| {
                b.iter(|| write_shard(&shard_dir, codec, data))
            });
            let path = write_shard(&shard_dir, codec, &data);
            let before = ALLOCATIONS.load(Ordering::Relaxed);
            assert_eq!(read_shard(&path, codec), count);
            let per_record = (ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / count as f64;
            eprintln!(
                "store/{mb}MB/read/{name}: {per_record:.1} allocations per record ({count} records)"
            );
            group.bench_with_input(BenchmarkId::new("read", name), &path, |b, path| {
                b.iter(|| read_shard(path, codec))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, store);
criterion_main!(benches);
