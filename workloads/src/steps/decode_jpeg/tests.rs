use super::*;

fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| image::Rgb([x as u8, y as u8, 128]));
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 95)
        .encode_image(&img)
        .unwrap();
    out
}

fn step(max_pixels: u64) -> DecodeJpeg {
    DecodeJpeg::new(Params {
        from: crate::steps::default_data_field(),
        to: "image".into(),
        max_pixels,
        max_expansion: crate::steps::DEFAULT_MAX_EXPANSION,
    })
    .unwrap()
}

const CTX: StepContext = StepContext::FIRST;

/// A photograph-like test picture: smooth gradients with texture, `w` x `h`.
fn picture(w: u16, h: u16) -> Vec<u8> {
    let mut rgb = Vec::with_capacity(w as usize * h as usize * 3);
    for y in 0..h as u32 {
        for x in 0..w as u32 {
            let n = (x.wrapping_mul(2_654_435_761) ^ y.wrapping_mul(40_503)) >> 27;
            rgb.extend([
                (x * 255 / w as u32) as u8 ^ n as u8,
                (y * 255 / h as u32) as u8,
                ((x + y) % 256) as u8,
            ]);
        }
    }
    rgb
}

/// What the generated corpus is made of: every sampling cameras write (and two rarer ones the
/// decoder leaves to zune-jpeg), baseline and progressive, with and without restart
/// intervals, odd sizes from one pixel up, three qualities, and greyscale.
fn corpus() -> Vec<(String, bool, Vec<u8>)> {
    use jpeg_encoder::{ColorType, Encoder, SamplingFactor};
    let mut files = Vec::new();
    for (w, h) in [(64u16, 48u16), (333, 251), (17, 9), (1, 1), (8, 40)] {
        let rgb = picture(w, h);
        for (sampling, ours) in [
            (SamplingFactor::F_1_1, true),
            (SamplingFactor::F_2_1, true),
            (SamplingFactor::F_2_2, true),
            (SamplingFactor::F_1_2, false),
            (SamplingFactor::F_4_1, false),
        ] {
            for progressive in [false, true] {
                for (restart, quality) in [(0u16, 90u8), (4, 50), (1, 100)] {
                    let mut out = Vec::new();
                    let mut e = Encoder::new(&mut out, quality);
                    e.set_sampling_factor(sampling);
                    e.set_progressive(progressive);
                    e.set_restart_interval(restart);
                    e.encode(&rgb, w, h, ColorType::Rgb).unwrap();
                    let kind = format!("progressive {progressive} restart {restart}");
                    let name = format!("{w}x{h} {sampling:?} {kind} q{quality}");
                    files.push((name, ours, out));
                }
            }
        }
        let grey: Vec<u8> = rgb.chunks(3).map(|p| p[1]).collect();
        for progressive in [false, true] {
            let mut out = Vec::new();
            let mut e = Encoder::new(&mut out, 85);
            e.set_progressive(progressive);
            e.encode(&grey, w, h, ColorType::Luma).unwrap();
            files.push((
                format!("{w}x{h} greyscale progressive {progressive}"),
                true,
                out,
            ));
        }
    }
    files.push(("image's encoder".into(), true, jpeg(40, 30)));
    files
}

/// prepbench's own decoder takes every baseline and progressive file of the corpus it is
/// meant for, and its pixels are zune-jpeg's (through `image`), byte for byte; the rest go to
/// zune-jpeg and come out as before.
#[test]
fn the_decoder_gives_the_pixels_zune_jpeg_gives() {
    for (name, ours, bytes) in &corpus() {
        let own = decoder::decode(bytes);
        assert_eq!(own.is_ok(), *ours, "{name}: {:?}", own.as_ref().err());
        let decoded = decode_rgb8(bytes, u64::MAX, 1e9).unwrap();
        let via_image = decode_rgb8_via_image(bytes, u64::MAX, 1e9).unwrap();
        assert_eq!(decoded.shape(), via_image.shape(), "{name}");
        assert!(decoded.data() == via_image.data(), "{name}: pixels differ");
    }
}

/// The same on real photographs (Debian's lomiri-wallpapers, baseline and progressive,
/// 1.5-15.9 MP), fetched by scripts/fetch_photos.py; skipped, saying why, where they cannot be.
#[test]
fn the_decoder_gives_the_pixels_zune_jpeg_gives_on_real_photographs() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let fetched = std::process::Command::new("python3")
        .arg(format!("{root}/scripts/fetch_photos.py"))
        .output();
    let dir = match fetched {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        Ok(out) => {
            eprintln!(
                "skipped: no real photographs: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        Err(e) => {
            eprintln!("skipped: python3 cannot run scripts/fetch_photos.py: {e}");
            return;
        }
    };
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jpg") {
            let bytes = std::fs::read(&path).unwrap();
            let own = decoder::decode(&bytes);
            assert!(own.is_ok(), "{}: {:?}", path.display(), own.err());
            let decoded = decode_rgb8(&bytes, u64::MAX, 1e9).unwrap();
            let via_image = decode_rgb8_via_image(&bytes, u64::MAX, 1e9).unwrap();
            assert!(decoded == via_image, "{}: pixels differ", path.display());
            checked += 1;
        }
    }
    assert!(checked >= 10, "{checked} photographs in {dir}");
}

/// Damaged files: bytes flipped in the headers and in the entropy-coded data, scans cut
/// short, runs of bytes removed or repeated (so markers go missing or appear twice). Neither
/// the decoder nor the step panics; a damaged file the decoder takes, zune-jpeg takes too and
/// decodes to the same pixels, and where the decoder does not, the step's answer is
/// zune-jpeg's. (A quarter of these files get past the decoder's checks.)
#[test]
fn damaged_files_never_panic_and_decode_as_zune_jpeg_does() {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let sources: Vec<Vec<u8>> = corpus()
        .into_iter()
        .filter(|(name, ours, _)| *ours && (name.starts_with("64x48") || name.starts_with("17x9")))
        .map(|(_, _, bytes)| bytes)
        .collect();
    assert!(sources.len() >= 20);
    let (mut taken, mut total) = (0, 0);
    for source in &sources {
        for round in 0..40 {
            let mut bytes = source.clone();
            let end = bytes.len() - 2;
            match round % 5 {
                // One to four bytes anywhere before the end-of-image marker.
                0 | 1 => {
                    for _ in 0..1 + next(4) {
                        let at = next(end);
                        bytes[at] = next(256) as u8;
                    }
                }
                // A bit flipped in the second half (scan data).
                2 => {
                    let at = end / 2 + next(end / 2);
                    bytes[at] ^= 1 << next(8);
                }
                // Cut anywhere, the end-of-image marker put back.
                3 => {
                    bytes.truncate(2 + next(end - 2));
                    bytes.extend_from_slice(&[0xFF, 0xD9]);
                }
                // A run of bytes removed or repeated.
                _ => {
                    let at = 2 + next(end - 2);
                    let len = 1 + next(16).min(end - at);
                    if next(2) == 0 {
                        bytes.drain(at..at + len);
                    } else {
                        let copy = bytes[at..at + len].to_vec();
                        bytes.splice(at..at, copy);
                    }
                }
            }
            total += 1;
            let own = decoder::decode(&bytes);
            let step = decode_rgb8(&bytes, crate::steps::MAX_IMAGE_PIXELS, 1024.0);
            let zune = decode_rgb8_via_image(&bytes, crate::steps::MAX_IMAGE_PIXELS, 1024.0);
            if let Ok(own) = own {
                taken += 1;
                let zune = zune.unwrap_or_else(|e| {
                    panic!("round {round}: the decoder took a file zune-jpeg refuses ({e})")
                });
                let TensorData::U8(pixels) = zune.data() else {
                    panic!("not u8")
                };
                assert!(
                    own.pixels == *pixels,
                    "round {round}: pixels differ from zune-jpeg's"
                );
            } else {
                assert_eq!(step.is_ok(), zune.is_ok(), "round {round}");
            }
        }
    }
    // The damage was not all caught by the headers: many files still reached the pixels.
    assert!(
        taken > total / 10,
        "{taken} of {total} damaged files decoded"
    );
}

#[test]
fn decodes_to_height_width_3_close_to_the_source() {
    let s = Sample::new(0).with("data", Field::Bytes(jpeg(40, 30)));
    let out = step(crate::steps::MAX_IMAGE_PIXELS).apply(s, &CTX).unwrap();
    let t = out.tensor("image").unwrap();
    assert_eq!(t.shape(), &[30, 40, 3]);
    let TensorData::U8(px) = t.data() else {
        panic!("not u8")
    };
    // pixel (x=20, y=10): R ~ 20, G ~ 10, B ~ 128 after lossy coding
    let i = (10 * 40 + 20) * 3;
    assert!(
        (px[i] as i32 - 20).abs() <= 6 && (px[i + 1] as i32 - 10).abs() <= 6,
        "{:?}",
        &px[i..i + 3]
    );
    assert!(out.get("data").is_none());
}

#[test]
fn garbage_truncated_and_oversized_inputs_are_errors() {
    for bad in [
        Vec::new(),
        b"not a jpeg".to_vec(),
        jpeg(64, 64)[..200].to_vec(),
    ] {
        let s = Sample::new(1).with("data", Field::Bytes(bad));
        let err = step(crate::steps::MAX_IMAGE_PIXELS)
            .apply(s, &CTX)
            .unwrap_err();
        assert!(err.message.contains("JPEG"), "{err}");
    }
    let s = Sample::new(2).with("data", Field::Bytes(jpeg(64, 64)));
    let err = step(1000).apply(s, &CTX).unwrap_err();
    assert!(err.message.contains("exceeds max_pixels"), "{err}");
}

/// `jpeg` with its frame header claiming `width` x `height`.
fn claiming(mut bytes: Vec<u8>, width: u16, height: u16) -> Vec<u8> {
    let sof = bytes
        .windows(2)
        .position(|w| w == [0xff, 0xc0])
        .expect("a baseline frame header");
    bytes[sof + 5..sof + 7].copy_from_slice(&height.to_be_bytes());
    bytes[sof + 7..sof + 9].copy_from_slice(&width.to_be_bytes());
    bytes
}

#[test]
fn a_header_claiming_more_than_the_bytes_can_hold_is_refused_before_decoding() {
    // 13000 x 13000 is under max_pixels, but no few-KB JPEG honestly holds 507 MB.
    let bomb = claiming(jpeg(64, 64), 13000, 13000);
    assert!(bomb.len() < 20_000);
    let s = Sample::new(3).with("data", Field::Bytes(bomb.clone()));
    let err = step(crate::steps::MAX_IMAGE_PIXELS)
        .apply(s, &CTX)
        .unwrap_err();
    assert!(err.message.contains("max_expansion 1024"), "{err}");
    assert!(err.message.contains("JPEG of 13000x13000"), "{err}");
    // The budget is a parameter: raised, a (smaller) false header goes on to the decoder,
    // whatever it makes of the data.
    let lax = DecodeJpeg::new(Params {
        from: crate::steps::default_data_field(),
        to: "image".into(),
        max_pixels: crate::steps::MAX_IMAGE_PIXELS,
        max_expansion: 1e9,
    })
    .unwrap();
    let s = Sample::new(3).with("data", Field::Bytes(claiming(jpeg(64, 64), 4000, 4000)));
    if let Err(err) = lax.apply(s, &CTX) {
        assert!(!err.message.contains("max_expansion"), "{err}");
    }
    // A plausible image of the same size in bytes decodes.
    let s = Sample::new(4).with("data", Field::Bytes(jpeg(640, 480)));
    assert!(step(crate::steps::MAX_IMAGE_PIXELS).apply(s, &CTX).is_ok());
}

/// `pixels` (`color`'s channels a pixel) encoded as PNG.
fn png(pixels: &[u8], width: u32, height: u32, color: image::ExtendedColorType) -> Vec<u8> {
    use image::ImageEncoder;
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(pixels, width, height, color)
        .unwrap();
    out
}

fn decoded(bytes: Vec<u8>) -> Result<(Vec<usize>, Vec<u8>), String> {
    let s = Sample::new(5).with("data", Field::Bytes(bytes));
    let out = step(crate::steps::MAX_IMAGE_PIXELS)
        .apply(s, &CTX)
        .map_err(|e| e.message)?;
    let t = out.tensor("image").unwrap();
    let TensorData::U8(px) = t.data() else {
        panic!("not u8")
    };
    Ok((t.shape().to_vec(), px.clone()))
}

/// A PNG under a JPEG's name (ImageNet's n02105855_2933.JPEG) decodes as TensorFlow's
/// `decode_jpeg` and Pillow decode it: RGB, alpha dropped, grey spread to three channels,
/// 16-bit samples rounded to 8; and its guards are the JPEG's.
#[test]
fn a_png_under_a_jpegs_name_decodes_to_its_rgb_pixels() {
    use image::ExtendedColorType as C;
    let rgb: Vec<u8> = (0..5 * 3 * 3).map(|v| (v * 7) as u8).collect();
    let got = decoded(png(&rgb, 5, 3, C::Rgb8)).unwrap();
    assert_eq!(got, (vec![3, 5, 3], rgb.clone()));
    let rgba: Vec<u8> = (rgb.chunks(3))
        .flat_map(|p| [p[0], p[1], p[2], 9])
        .collect();
    assert_eq!(decoded(png(&rgba, 5, 3, C::Rgba8)).unwrap().1, rgb);
    let grey: Vec<u8> = (0..15).map(|v| v * 17).collect();
    let spread: Vec<u8> = grey.iter().flat_map(|&v| [v, v, v]).collect();
    assert_eq!(decoded(png(&grey, 5, 3, C::L8)).unwrap().1, spread);
    let wide: Vec<u8> = [0u16, 257, 65535, 1000, 32768, 12345]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    let narrow = [0u8, 1, 255, 4, 128, 48];
    assert_eq!(decoded(png(&wide, 2, 1, C::Rgb16)).unwrap().1, narrow);
    // Truncated, it is an invalid PNG, not an invalid JPEG; too large, refused before decoding.
    let whole = png(&rgb, 5, 3, C::Rgb8);
    let err = decoded(whole[..whole.len() - 20].to_vec()).unwrap_err();
    assert!(err.contains("invalid PNG"), "{err}");
    let s = Sample::new(6).with("data", Field::Bytes(whole));
    let err = step(10).apply(s, &CTX).unwrap_err();
    assert!(err.message.contains("exceeds max_pixels"), "{err}");
}

/// Other image formats under a JPEG's name are refused naming what they are.
#[test]
fn other_formats_under_a_jpegs_name_are_named_in_the_error() {
    for (bytes, format) in [
        (b"GIF89a\x01\x00\x01\x00".to_vec(), "a GIF"),
        (b"RIFF\x10\x00\x00\x00WEBPVP8 ".to_vec(), "a WebP"),
        (b"BM\x3a\x00\x00\x00".to_vec(), "a BMP"),
        (b"II*\x00\x08\x00\x00\x00".to_vec(), "a TIFF"),
        (b"\x00\x00\x00\x18ftypheic".to_vec(), "a HEIF or AVIF"),
    ] {
        let err = decoded(bytes).unwrap_err();
        assert!(err.contains(format) && err.contains("not a JPEG"), "{err}");
    }
    let err = decoded(b"not a jpeg".to_vec()).unwrap_err();
    assert!(err.contains("no start-of-image marker"), "{err}");
}
