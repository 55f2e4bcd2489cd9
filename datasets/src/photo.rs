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
    fn random(rng: &mut SeededRng, width: usize, height: usize, (lo, hi): (f64, f64)) -> Blob {
        Blob {
            cx: rng.range_f64(0.0, width as f64) as f32,
            cy: rng.range_f64(0.0, height as f64) as f32,
            rx: rng.range_f64(lo, hi) as f32 * width as f32,
            ry: rng.range_f64(lo, hi) as f32 * height as f32,
            colour: random_colour(rng),
            texture: rng.range_f64(0.2, 0.9) as f32,
        }
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
        .map(|_| Blob::random(rng, width, height, (0.05, 0.35)))
        .collect();
    let clutter = (0..style.clutter)
        .map(|_| Blob::random(rng, width, height, (0.01, 0.06)))
        .collect();
    Scene {
        width,
        height,
        sky,
        ground,
        horizon,
        clutter,
        objects,
    }
}

/// An RGB8 image (row-major, 3 bytes per pixel) of `width` x `height`.
pub fn synthesize(rng: &mut SeededRng, width: usize, height: usize, style: PhotoStyle) -> Vec<u8> {
    let s = scene(rng, width, height, style, None);
    render(rng, &s, style)
}

/// Renders `scene` with noise textures drawn from `rng`.
pub fn render(rng: &mut SeededRng, scene: &Scene, style: PhotoStyle) -> Vec<u8> {
    let (width, height) = (scene.width, scene.height);
    let coarsest = (width.max(height) / 4).next_power_of_two().max(8);
    let luma = fractal_noise(rng, width, height, coarsest, 0.62, style.detail);
    let chroma = fractal_noise(rng, width, height, coarsest, 0.5, 0.0);
    let (sky, ground, horizon) = (scene.sky, scene.ground, scene.horizon);
    let blobs: Vec<&Blob> = scene.clutter.iter().chain(&scene.objects).collect();
    let mut grain = SeededRng::new(rng.next_u64());
    let mut out = Vec::with_capacity(width * height * 3);
    // The blobs a row crosses, in drawing order: the same pixels as testing every blob at every
    // pixel, at a fraction of the tests (an image has hundreds of clutter blobs).
    let mut row_blobs: Vec<&Blob> = Vec::with_capacity(blobs.len());
    for y in 0..height {
        let fy = y as f32;
        let t = ((fy - horizon) / (0.08 * height as f32)).clamp(-1.0, 1.0) * 0.5 + 0.5;
        let base: [f32; 3] = std::array::from_fn(|c| sky[c] + (ground[c] - sky[c]) * t);
        row_blobs.clear();
        row_blobs.extend(
            blobs
                .iter()
                .copied()
                .filter(|b| (fy - b.cy).abs() <= b.ry * 1.1),
        );
        for x in 0..width {
            let i = y * width + x;
            let mut colour = base;
            let mut texture = 0.35;
            for b in row_blobs.iter().copied() {
                if (x as f32 - b.cx).abs() > b.rx * 1.1 {
                    continue;
                }
                let (dx, dy) = ((x as f32 - b.cx) / b.rx, (fy - b.cy) / b.ry);
                let d = dx * dx + dy * dy;
                if d < 1.2 {
                    // Soft edge over the outer ~10 % of the radius.
                    let alpha = ((1.1 - d) * 10.0).clamp(0.0, 1.0);
                    for (c, target) in colour.iter_mut().zip(b.colour) {
                        *c += (target - *c) * alpha;
                    }
                    texture += (b.texture - texture) * alpha;
                }
            }
            let shade = 1.0 + texture * luma[i];
            let tint = 18.0 * chroma[i];
            let noise = if style.grain > 0.0 {
                (grain.unit_f64() as f32 - 0.5) * 2.0 * style.grain
            } else {
                0.0
            };
            out.push((colour[0] * shade + tint + noise).clamp(0.0, 255.0) as u8);
            out.push((colour[1] * shade + noise).clamp(0.0, 255.0) as u8);
            out.push((colour[2] * shade - tint + noise).clamp(0.0, 255.0) as u8);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_pixels_and_content_is_neither_flat_nor_noise() {
        let style = PhotoStyle {
            detail: 1.0,
            grain: 3.0,
            clutter: 20,
        };
        let a = synthesize(&mut SeededRng::new(5), 64, 48, style);
        let b = synthesize(&mut SeededRng::new(5), 64, 48, style);
        let c = synthesize(&mut SeededRng::new(6), 64, 48, style);
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
