//! Photo-like RGB content for generated image datasets: a sky/ground gradient, textured objects
//! with soft edges, multi-octave (1/f) value noise and sensor grain. Such images compress like
//! photographs (neither flat colour nor white noise), so JPEG sizes and decode costs are
//! realistic.

use workloads::rng::SeededRng;

/// How much fine detail and grain an image gets; both scale the JPEG size.
#[derive(Clone, Copy, Debug)]
pub struct PhotoStyle {
    /// Amplitude of the finest noise octaves relative to the coarse ones.
    pub detail: f32,
    /// Amplitude of per-pixel sensor grain in 8-bit levels.
    pub grain: f32,
    /// Number of small objects (edges are what makes photographs expensive to code).
    pub clutter: usize,
    /// Share of objects, and chance of the background, drawn smooth: no texture and no grain,
    /// as skies, walls and out-of-focus backgrounds are. Such areas are what DEFLATE finds to
    /// shrink in a decoded photograph; 0 draws every surface textured.
    pub flat: f32,
}

/// Multi-octave value noise in roughly [-1, 1]: lattice values at cell sizes `coarsest`,
/// `coarsest/2`, ... (down to 2 px), smoothly interpolated, amplitude x `persistence` per octave.
fn fractal_noise(
    rng: &mut SeededRng,
    width: usize,
    height: usize,
    coarsest: usize,
    persistence: f32,
    fine_gain: f32,
) -> Vec<f32> {
    let mut field = vec![0f32; width * height];
    let mut cell = coarsest.max(2);
    let mut amplitude = 1.0f32;
    let mut total = 0.0f32;
    while cell >= 2 {
        let gain = if cell <= 6 {
            amplitude * fine_gain
        } else {
            amplitude
        };
        let (gw, gh) = (width / cell + 2, height / cell + 2);
        let lattice: Vec<f32> = (0..gw * gh)
            .map(|_| rng.range_f64(-1.0, 1.0) as f32)
            .collect();
        let inv = 1.0 / cell as f32;
        // Horizontal interpolation weights are the same for every row: compute them once.
        let xs: Vec<(usize, f32)> = (0..width)
            .map(|x| {
                let fx = x as f32 * inv;
                let ix = fx as usize;
                let t = fx - ix as f32;
                (ix, t * t * (3.0 - 2.0 * t))
            })
            .collect();
        for y in 0..height {
            let fy = y as f32 * inv;
            let iy = fy as usize;
            let ty = fy - iy as f32;
            let sy = ty * ty * (3.0 - 2.0 * ty);
            let (r0, r1) = (
                &lattice[iy * gw..(iy + 1) * gw],
                &lattice[(iy + 1) * gw..(iy + 2) * gw],
            );
            let row = &mut field[y * width..(y + 1) * width];
            for (out, &(ix, sx)) in row.iter_mut().zip(&xs) {
                let top = r0[ix] + (r0[ix + 1] - r0[ix]) * sx;
                let bottom = r1[ix] + (r1[ix + 1] - r1[ix]) * sx;
                *out += gain * (top + (bottom - top) * sy);
            }
        }
        total += gain;
        amplitude *= persistence;
        cell /= 2;
    }
    let norm = 1.0 / total.max(1e-6);
    field.iter_mut().for_each(|v| *v *= norm * 1.6);
    field
}

fn random_colour(rng: &mut SeededRng) -> [f32; 3] {
    [0, 1, 2].map(|_| rng.range_f64(30.0, 225.0) as f32)
}

/// A soft-edged elliptical object: visible where ((x-cx)/rx)^2 + ((y-cy)/ry)^2 < 1.1.
#[derive(Clone, Debug, PartialEq)]
pub struct Blob {
    pub cx: f32,
    pub cy: f32,
    pub rx: f32,
    pub ry: f32,
    pub colour: [f32; 3],
    pub texture: f32,
}

/// How far an object's soft edge reaches, relative to its radii.
pub const EDGE: f32 = 1.048_808_8; // sqrt(1.1)

impl Blob {
    fn random(
        rng: &mut SeededRng,
        width: usize,
        height: usize,
        (lo, hi): (f64, f64),
        flat: f32,
    ) -> Blob {
        let mut blob = Blob {
            cx: rng.range_f64(0.0, width as f64) as f32,
            cy: rng.range_f64(0.0, height as f64) as f32,
            rx: rng.range_f64(lo, hi) as f32 * width as f32,
            ry: rng.range_f64(lo, hi) as f32 * height as f32,
            colour: random_colour(rng),
            texture: rng.range_f64(0.2, 0.9) as f32,
        };
        // Drawn only for styles with smooth surfaces, so the others keep their pixels.
        if flat > 0.0 && rng.unit_f64() < flat as f64 {
            blob.texture = 0.0;
        }
        blob
    }
}

/// What an image shows, decided before any pixel is drawn (so annotations can be derived from
/// it without rendering): background, clutter, and the main objects drawn on top.
#[derive(Clone, Debug)]
pub struct Scene {
    pub width: usize,
    pub height: usize,
    sky: [f32; 3],
    ground: [f32; 3],
    horizon: f32,
    /// How textured the background is (0: smooth).
    background: f32,
    clutter: Vec<Blob>,
    /// The main objects, in drawing order (later ones cover earlier ones).
    pub objects: Vec<Blob>,
}

/// Draws a scene with `objects` main objects (3 to 8 when `None`) and the style's clutter.
pub fn scene(
    rng: &mut SeededRng,
    width: usize,
    height: usize,
    style: PhotoStyle,
    objects: Option<usize>,
) -> Scene {
    let (sky, ground) = (random_colour(rng), random_colour(rng));
    let horizon = rng.range_f64(0.25, 0.75) as f32 * height as f32;
    let count = objects.unwrap_or_else(|| 3 + rng.below(6) as usize);
    let objects = (0..count)
        .map(|_| Blob::random(rng, width, height, (0.05, 0.35), style.flat))
        .collect();
    let clutter = (0..style.clutter)
        .map(|_| Blob::random(rng, width, height, (0.01, 0.06), style.flat))
        .collect();
    let smooth = style.flat > 0.0 && rng.unit_f64() < style.flat as f64;
    let background = if smooth { 0.0 } else { 0.35 };
    Scene {
        width,
        height,
        sky,
        ground,
        horizon,
        background,
        clutter,
        objects,
    }
}

/// `pixels` (RGB8, row-major) as a baseline JPEG at `quality` with 4:2:0 chroma subsampling, as
/// cameras and ImageNet's files store them. jpeg-encoder (pure Rust, AVX2 where the CPU has it)
/// writes the generated datasets' JPEGs several times faster than `image`'s encoder.
pub fn encode_jpeg(
    pixels: &[u8],
    width: usize,
    height: usize,
    quality: u8,
) -> Result<Vec<u8>, String> {
    let (w, h) = match (u16::try_from(width), u16::try_from(height)) {
        (Ok(w), Ok(h)) => (w, h),
        _ => {
            return Err(format!(
                "{width}x{height} is beyond JPEG's 65535-pixel sides"
            ))
        }
    };
    let mut jpeg = Vec::with_capacity(width * height / 2);
    let mut encoder = jpeg_encoder::Encoder::new(&mut jpeg, quality);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_2_0);
    encoder
        .encode(pixels, w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| e.to_string())?;
    Ok(jpeg)
}

/// An RGB8 image (row-major, 3 bytes per pixel) of `width` x `height`.
pub fn synthesize(
    rng: &mut SeededRng,
    width: usize,
    height: usize,
    style: PhotoStyle,
    texture: Texture,
) -> Vec<u8> {
    let s = scene(rng, width, height, style, None);
    render(rng, &s, style, texture)
}

/// Where an image's noise textures come from.
#[derive(Clone, Copy, Debug)]
pub enum Texture {
    /// Drawn for this image alone, at its size (any size).
    Own,
    /// A crop, at an offset drawn per image, of a periodic texture canvas drawn once per dataset
    /// seed: the noise that was most of an image's cost is drawn once per dataset. Images wider
    /// or taller than the canvas draw their own.
    Shared(u64),
}

/// Side of a shared texture canvas (periodic, so a crop may wrap around its edges).
const CANVAS: usize = 2048;
/// Coarsest noise cell of a shared canvas (as an own texture of a 500-800 px image).
const CANVAS_COARSEST: usize = 128;

/// The luma and chroma noise of a shared canvas.
struct Canvas {
    luma: Vec<f32>,
    chroma: Vec<f32>,
}

/// Multi-octave value noise on a periodic `side` x `side` square (a torus: the lattice wraps),
/// normalized as [`fractal_noise`].
fn periodic_noise(
    rng: &mut SeededRng,
    side: usize,
    coarsest: usize,
    persistence: f32,
    fine_gain: f32,
) -> Vec<f32> {
    let mut field = vec![0f32; side * side];
    let (mut cell, mut amplitude, mut total) = (coarsest.max(2), 1.0f32, 0.0f32);
    while cell >= 2 {
        let gain = if cell <= 6 {
            amplitude * fine_gain
        } else {
            amplitude
        };
        let g = side / cell;
        let lattice: Vec<f32> = (0..g * g)
            .map(|_| rng.range_f64(-1.0, 1.0) as f32)
            .collect();
        let smooth = |i: usize| {
            let t = (i % cell) as f32 / cell as f32;
            t * t * (3.0 - 2.0 * t)
        };
        let xs: Vec<(usize, usize, f32)> = (0..side)
            .map(|x| (x / cell, (x / cell + 1) % g, smooth(x)))
            .collect();
        for y in 0..side {
            let (iy, sy) = (y / cell, smooth(y));
            let r0 = &lattice[iy * g..(iy + 1) * g];
            let next = (iy + 1) % g;
            let r1 = &lattice[next * g..(next + 1) * g];
            for (out, &(i0, i1, sx)) in field[y * side..(y + 1) * side].iter_mut().zip(&xs) {
                let top = r0[i0] + (r0[i1] - r0[i0]) * sx;
                let bottom = r1[i0] + (r1[i1] - r1[i0]) * sx;
                *out += gain * (top + (bottom - top) * sy);
            }
        }
        total += gain;
        amplitude *= persistence;
        cell /= 2;
    }
    let norm = 1.6 / total.max(1e-6);
    field.iter_mut().for_each(|v| *v *= norm);
    field
}

/// The shared canvas of dataset `seed` and `detail`, drawn on first use (luma and chroma on two
/// threads). The last two are kept: a process generates one dataset at a time.
fn canvas(seed: u64, detail: f32) -> std::sync::Arc<Canvas> {
    use std::sync::{Arc, Mutex};
    type Key = (u64, u32);
    static CANVASES: Mutex<Vec<(Key, Arc<Canvas>)>> = Mutex::new(Vec::new());
    let key = (seed, detail.to_bits());
    // Held while drawing: a second thread wanting the same canvas waits for it.
    let mut kept = CANVASES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, c)) = kept.iter().find(|(k, _)| *k == key) {
        return c.clone();
    }
    let mut rng = SeededRng::from_parts(&[seed, detail.to_bits() as u64, 0xca9a5]);
    let (mut luma_rng, mut chroma_rng) = (
        SeededRng::new(rng.next_u64()),
        SeededRng::new(rng.next_u64()),
    );
    let (luma, chroma) = std::thread::scope(|scope| {
        let chroma =
            scope.spawn(|| periodic_noise(&mut chroma_rng, CANVAS, CANVAS_COARSEST, 0.5, 0.0));
        let luma = periodic_noise(&mut luma_rng, CANVAS, CANVAS_COARSEST, 0.62, detail);
        let chroma = chroma
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (luma, chroma)
    });
    let made = Arc::new(Canvas { luma, chroma });
    if kept.len() == 2 {
        kept.remove(0);
    }
    kept.push((key, made.clone()));
    made
}

/// `width` x `height` of a periodic canvas from (`left`, `top`), wrapping around.
fn crop(field: &[f32], left: usize, top: usize, width: usize, height: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(width * height);
    for y in 0..height {
        let row = &field[((top + y) % CANVAS) * CANVAS..][..CANVAS];
        let first = (CANVAS - left).min(width);
        out.extend_from_slice(&row[left..left + first]);
        out.extend_from_slice(&row[..width - first]);
    }
    out
}

/// Renders `scene` with noise textures from `texture` (offsets and grain drawn from `rng`).
pub fn render(rng: &mut SeededRng, scene: &Scene, style: PhotoStyle, texture: Texture) -> Vec<u8> {
    let (width, height) = (scene.width, scene.height);
    let (luma, chroma) = match texture {
        Texture::Shared(seed) if width <= CANVAS && height <= CANVAS => {
            let shared = canvas(seed, style.detail);
            let (left, top) = (
                rng.below(CANVAS as u64) as usize,
                rng.below(CANVAS as u64) as usize,
            );
            (
                crop(&shared.luma, left, top, width, height),
                crop(&shared.chroma, left, top, width, height),
            )
        }
        _ => {
            let coarsest = (width.max(height) / 4).next_power_of_two().max(8);
            (
                fractal_noise(rng, width, height, coarsest, 0.62, style.detail),
                fractal_noise(rng, width, height, coarsest, 0.5, 0.0),
            )
        }
    };
    let (sky, ground, horizon) = (scene.sky, scene.ground, scene.horizon);
    let blobs: Vec<&Blob> = scene.clutter.iter().chain(&scene.objects).collect();
    let mut grain = SeededRng::new(rng.next_u64());
    let mut out = vec![0u8; width * height * 3];
    // Each row is painted blob by blob over the span the blob covers, in drawing order: every
    // pixel gets the same blends in the same order as testing every blob at every pixel (so the
    // same bytes), at the cost of the pixels the blobs cover.
    let mut colours: Vec<[f32; 3]> = vec![[0.0; 3]; width];
    let mut textures: Vec<f32> = vec![0.0; width];
    for y in 0..height {
        let fy = y as f32;
        let t = ((fy - horizon) / (0.08 * height as f32)).clamp(-1.0, 1.0) * 0.5 + 0.5;
        let base: [f32; 3] = std::array::from_fn(|c| sky[c] + (ground[c] - sky[c]) * t);
        colours.fill(base);
        textures.fill(scene.background);
        for b in blobs
            .iter()
            .copied()
            .filter(|b| (fy - b.cy).abs() <= b.ry * 1.1)
        {
            // A span one pixel wider than the blob's reach on each side; the exact test below
            // decides, as it did per pixel.
            let reach = b.rx * 1.1;
            let lo = ((b.cx - reach).floor() - 1.0).max(0.0) as usize;
            let hi = (((b.cx + reach).ceil() + 1.0).max(0.0) as usize).min(width);
            let dy = (fy - b.cy) / b.ry;
            for x in lo..hi {
                if (x as f32 - b.cx).abs() > reach {
                    continue;
                }
                let dx = (x as f32 - b.cx) / b.rx;
                let d = dx * dx + dy * dy;
                if d < 1.2 {
                    // Soft edge over the outer ~10 % of the radius.
                    let alpha = ((1.1 - d) * 10.0).clamp(0.0, 1.0);
                    for (c, target) in colours[x].iter_mut().zip(b.colour) {
                        *c += (target - *c) * alpha;
                    }
                    textures[x] += (b.texture - textures[x]) * alpha;
                }
            }
        }
        let row = y * width..(y + 1) * width;
        let pixels = out[row.start * 3..row.end * 3].chunks_exact_mut(3);
        let noise = luma[row.clone()].iter().zip(&chroma[row]);
        for ((pixel, (colour, texture)), (l, c)) in
            pixels.zip(colours.iter().zip(&textures)).zip(noise)
        {
            let shade = 1.0 + texture * l;
            let tint = 18.0 * c;
            // Grain follows the surface's texture where a style has smooth surfaces.
            let amplitude = if style.flat > 0.0 {
                style.grain * (texture / 0.55).min(1.6)
            } else {
                style.grain
            };
            let noise = if style.grain > 0.0 {
                (grain.unit_f64() as f32 - 0.5) * 2.0 * amplitude
            } else {
                0.0
            };
            pixel[0] = (colour[0] * shade + tint + noise).clamp(0.0, 255.0) as u8;
            pixel[1] = (colour[1] * shade + noise).clamp(0.0, 255.0) as u8;
            pixel[2] = (colour[2] * shade - tint + noise).clamp(0.0, 255.0) as u8;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crop_of_the_canvas_wraps_around_its_edges() {
        let field: Vec<f32> = (0..CANVAS * CANVAS).map(|i| i as f32).collect();
        let (left, top, width, height) = (CANVAS - 2, CANVAS - 1, 5, 3);
        let got = crop(&field, left, top, width, height);
        let want: Vec<f32> = (0..height)
            .flat_map(|y| (0..width).map(move |x| (y, x)))
            .map(|(y, x)| field[((top + y) % CANVAS) * CANVAS + (left + x) % CANVAS])
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn images_sharing_a_canvas_are_distinct_and_deterministic() {
        let style = PhotoStyle {
            detail: 12.0,
            grain: 8.0,
            clutter: 40,
            flat: 0.0,
        };
        let draw = |n: u64| synthesize(&mut SeededRng::new(n), 96, 64, style, Texture::Shared(7));
        let images: Vec<Vec<u8>> = (0..6).map(draw).collect();
        for (i, a) in images.iter().enumerate() {
            for b in &images[i + 1..] {
                // Distinct content, not a shifted copy: most pixels differ.
                let same = a.iter().zip(b).filter(|(x, y)| x == y).count();
                assert!(same < a.len() / 4, "{same} of {} bytes equal", a.len());
            }
        }
        assert_eq!(draw(3), images[3]);
        // Larger than the canvas: drawn on its own, at its size.
        let wide = synthesize(
            &mut SeededRng::new(1),
            CANVAS + 1,
            2,
            style,
            Texture::Shared(7),
        );
        assert_eq!(wide.len(), (CANVAS + 1) * 2 * 3);
    }

    #[test]
    fn same_seed_same_pixels_and_content_is_neither_flat_nor_noise() {
        let style = PhotoStyle {
            detail: 1.0,
            grain: 3.0,
            clutter: 20,
            flat: 0.0,
        };
        let a = synthesize(&mut SeededRng::new(5), 64, 48, style, Texture::Own);
        let b = synthesize(&mut SeededRng::new(5), 64, 48, style, Texture::Own);
        let c = synthesize(&mut SeededRng::new(6), 64, 48, style, Texture::Own);
        assert_eq!(a.len(), 64 * 48 * 3);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mean = a.iter().map(|&v| v as f64).sum::<f64>() / a.len() as f64;
        let var = a.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / a.len() as f64;
        assert!(var > 100.0, "too flat: variance {var}");
        // Neighbouring pixels are strongly correlated in photographs, not in white noise.
        let diffs: f64 = a
            .chunks(3)
            .zip(a.chunks(3).skip(1))
            .map(|(p, q)| (p[1] as f64 - q[1] as f64).abs())
            .sum::<f64>()
            / (a.len() / 3 - 1) as f64;
        assert!(
            diffs < var.sqrt() * 0.5,
            "neighbour difference {diffs} vs sd {}",
            var.sqrt()
        );
    }
}
