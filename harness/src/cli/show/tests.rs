use super::*;

#[test]
fn npy_headers_are_aligned_and_describe_the_array() {
    let t = Tensor::new(vec![2, 3], TensorData::F32(vec![0.0; 6])).unwrap();
    let bytes = npy_bytes(&t);
    let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    assert_eq!((10 + header_len) % 64, 0);
    let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
    assert!(
        header.contains("'descr': '<f4'") && header.contains("'shape': (2, 3)"),
        "{header}"
    );
    assert_eq!(bytes.len(), 10 + header_len + 24);
    let v = Tensor::new(vec![5], TensorData::U8(vec![1; 5])).unwrap();
    assert!(String::from_utf8_lossy(&npy_bytes(&v)).contains("'shape': (5,)"));
}

#[test]
fn steps_are_found_by_name_op_or_unique_prefix() {
    let w = workloads::load("cv").unwrap();
    assert_eq!(resolve_end(&w, Some("resized"), None).unwrap(), 3);
    assert_eq!(resolve_end(&w, Some("decode_jpeg"), None).unwrap(), 2);
    assert_eq!(resolve_end(&w, Some("pixel"), None).unwrap(), 4);
    assert_eq!(resolve_end(&w, None, Some("decoded")).unwrap(), 2);
    assert_eq!(resolve_end(&w, None, None).unwrap(), w.steps.len());
    let err = resolve_end(&w, Some("blur"), None).unwrap_err().to_string();
    assert!(
        err.contains("no step `blur`") && err.contains("resized (resize_shorter)"),
        "{err}"
    );
}

#[test]
fn spectrograms_put_low_frequencies_at_the_bottom() {
    let t = Tensor::new(
        vec![2, 3],
        TensorData::F32(vec![0.0, 0.5, 1.0, 0.0, 0.5, 1.0]),
    )
    .unwrap();
    let img = render(&Sample::new(0), "s", &t, true).unwrap();
    assert_eq!((img.width(), img.height()), (2, 3));
    // The highest bin (value 1.0, yellow) is the top row.
    assert_eq!(img.get_pixel(0, 0).0, ramp(255));
    assert_eq!(img.get_pixel(1, 2).0, ramp(0));
}

/// Every empty shape (an image of no rows or no columns, a spectrogram of no frames) is
/// refused with the field's name, so that a directory gets its `.npy` and no broken PNG,
/// and the other fields are still written.
#[test]
fn empty_tensors_are_not_drawn_and_do_not_stop_the_other_fields() {
    for shape in [vec![0, 3], vec![3, 0], vec![0, 4, 3], vec![2, 0, 1]] {
        let t = Tensor::new(shape.clone(), TensorData::F32(Vec::new())).unwrap();
        for spectrogram in [false, true] {
            let err = render(&Sample::new(0), "e", &t, spectrogram)
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("field `e`") && err.contains("no values"),
                "{err}"
            );
        }
    }
    let sample = Sample::new(0)
        .with(
            "empty",
            Field::Tensor(Tensor::new(vec![0, 3], TensorData::F32(Vec::new())).unwrap()),
        )
        .with(
            "grey",
            Field::Tensor(Tensor::new(vec![2, 2], TensorData::U8(vec![0, 50, 100, 255])).unwrap()),
        );
    let dir = tempfile::tempdir().unwrap();
    let workload = workloads::load("cv").unwrap();
    let opts = ShowOptions {
        workload: "cv".into(),
        sample: 0,
        part: 0,
        after: None,
        strategy: None,
        field: None,
        out: Some(dir.path().to_path_buf()),
        list: false,
        dataset: None,
        seed: 0,
        epoch: 0,
        data_dir: dir.path().to_path_buf(),
    };
    let written = write_outputs(&workload, &sample, &opts, dir.path()).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["empty.npy", "grey.npy", "grey.png"]);
}
