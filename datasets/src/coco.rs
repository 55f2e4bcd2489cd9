//! COCO's layout: `train2017/<012d>.jpg` plus `annotations/instances_train2017.json` (images,
//! annotations with bbox [x, y, w, h], area, category_id, iscrowd, segmentation; categories).
//! The generator's boxes are the objects it drew; the reader gives each image its boxes
//! (`boxes`, float32 [k, 4]) and category ids (`categories`, int32 [k]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use workloads::rng::SeededRng;
use workloads::{Field, Tensor, TensorData};

use crate::files::{Entry, Files};
use crate::photo::{encode_jpeg, render, scene, PhotoStyle, Scene, Texture, EDGE};
use crate::source::{files_by_name, indexed_item, Source};
use crate::{Calibration, DatasetError, DatasetKind, GenerateRequest};

pub const ANNOTATIONS: &str = "annotations/instances_train2017.json";
/// Categories of generated data (COCO uses 80).
pub const CATEGORIES: u64 = 80;
const JPEG_QUALITY: u8 = 93;
const STYLE: PhotoStyle = PhotoStyle {
    detail: 12.0,
    grain: 8.0,
    clutter: 260,
    flat: 0.0,
};
/// Vertices of the polygon approximating each object's outline.
const OUTLINE_VERTICES: usize = 16;

pub const KIND: DatasetKind = DatasetKind {
    name: "coco",
    family: "coco",
    real: "COCO train2017",
    layout: "train2017/<012d>.jpg + annotations/instances_train2017.json (COCO format)",
    samples_per_file: 1,
    calibration: Calibration::of(0.16, 0.20),
    options: &[],
    reader_options: &["images=DIR", "annotations=FILE"],
    open,
    generate_one: Some(generate_one),
    finish: Some(write_annotations),
    expected_mb: None,
    fields: |_| &["boxes", "categories"],
    cheap_to_generate: false,
};

#[derive(Debug, Serialize, Deserialize)]
pub struct CocoImage {
    pub id: u64,
    pub file_name: String,
    pub width: u32,
    pub height: u32,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CocoAnnotation {
    pub id: u64,
    pub image_id: u64,
    pub category_id: u64,
    /// [x, y, width, height] in pixels, from the top-left corner.
    pub bbox: [f64; 4],
    pub area: f64,
    #[serde(default)]
    pub iscrowd: u8,
    #[serde(default)]
    pub segmentation: serde_json::Value,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CocoCategory {
    pub id: u64,
    pub name: String,
    pub supercategory: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct CocoFile {
    #[serde(default)]
    pub info: serde_json::Value,
    #[serde(default)]
    pub licenses: serde_json::Value,
    pub images: Vec<CocoImage>,
    pub annotations: Vec<CocoAnnotation>,
    pub categories: Vec<CocoCategory>,
}

/// Image n's size, scene and object categories, drawn from (seed, n) before any pixel.
fn plan(seed: u64, n: usize) -> (Scene, Vec<u64>, SeededRng) {
    let mut rng = SeededRng::from_parts(&[seed, n as u64, 0xc0c0]);
    let shorter = [480, 480, 480, 427, 360, 640][rng.below(6) as usize];
    let (width, height) = if rng.below(10) < 7 {
        (640, shorter)
    } else {
        (shorter, 640)
    };
    // 1 + Binomial(14, 0.45): mean 7.3 objects per image, as COCO's 7.3 boxes per image.
    let objects = 1 + (0..14).filter(|_| rng.unit_f64() < 0.45).count();
    let s = scene(&mut rng, width, height, STYLE, Some(objects));
    let categories = (0..objects).map(|_| 1 + rng.below(CATEGORIES)).collect();
    (s, categories, rng)
}

pub fn file_name(n: usize) -> String {
    format!("{:012}.jpg", n + 1)
}

pub fn generate_one(request: &GenerateRequest, n: usize) -> Result<(), DatasetError> {
    let (s, _, mut rng) = plan(request.seed, n);
    let pixels = render(&mut rng, &s, STYLE, Texture::Shared(request.seed));
    let jpeg = encode_jpeg(&pixels, s.width, s.height, JPEG_QUALITY)
        .map_err(|e| DatasetError::Generate(format!("JPEG encoding of sample {n} failed: {e}")))?;
    crate::write_atomically(&request.root.join("train2017").join(file_name(n)), &jpeg)
}

/// An object's outline (clipped to the image) as COCO's flat [x1, y1, x2, y2, ...] polygon.
fn outline(cx: f32, cy: f32, rx: f32, ry: f32, width: usize, height: usize) -> Vec<f64> {
    (0..OUTLINE_VERTICES)
        .flat_map(|i| {
            let a = i as f64 * std::f64::consts::TAU / OUTLINE_VERTICES as f64;
            let x = (cx as f64 + (rx * EDGE) as f64 * a.cos()).clamp(0.0, width as f64);
            let y = (cy as f64 + (ry * EDGE) as f64 * a.sin()).clamp(0.0, height as f64);
            [(x * 100.0).round() / 100.0, (y * 100.0).round() / 100.0]
        })
        .collect()
}

/// Shoelace area of a flat polygon.
fn polygon_area(p: &[f64]) -> f64 {
    let n = p.len() / 2;
    (0..n)
        .map(|i| p[2 * i] * p[2 * ((i + 1) % n) + 1] - p[2 * ((i + 1) % n)] * p[2 * i + 1])
        .sum::<f64>()
        .abs()
        / 2.0
}

/// The bounding box [x, y, w, h] of a flat polygon.
fn polygon_bbox(p: &[f64]) -> [f64; 4] {
    let xs = p.iter().step_by(2);
    let ys = p.iter().skip(1).step_by(2);
    let (x0, x1) = xs.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    let (y0, y1) = ys.fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    let round = |v: f64| (v * 100.0).round() / 100.0;
    [round(x0), round(y0), round(x1 - x0), round(y1 - y0)]
}

/// Writes the annotation file of images 0..samples.
pub fn write_annotations(request: &GenerateRequest) -> Result<(), DatasetError> {
    let mut images = Vec::with_capacity(request.samples);
    let mut annotations = Vec::new();
    for n in 0..request.samples {
        let (s, categories, _) = plan(request.seed, n);
        let image_id = n as u64 + 1;
        images.push(CocoImage {
            id: image_id,
            file_name: file_name(n),
            width: s.width as u32,
            height: s.height as u32,
        });
        for (object, category_id) in s.objects.iter().zip(categories) {
            let polygon = outline(
                object.cx, object.cy, object.rx, object.ry, s.width, s.height,
            );
            annotations.push(CocoAnnotation {
                id: annotations.len() as u64 + 1,
                image_id,
                category_id,
                bbox: polygon_bbox(&polygon),
                area: (polygon_area(&polygon) * 100.0).round() / 100.0,
                iscrowd: 0,
                segmentation: serde_json::json!([polygon]),
            });
        }
    }
    let categories = (1..=CATEGORIES)
        .map(|id| CocoCategory {
            id,
            name: format!("object-{id:02}"),
            supercategory: "synthetic".into(),
        })
        .collect();
    let info = serde_json::json!({"description": "prepbench generated COCO-format dataset", "seed": request.seed});
    let file = CocoFile {
        info,
        licenses: serde_json::json!([]),
        images,
        annotations,
        categories,
    };
    let text = serde_json::to_vec(&file)
        .map_err(|e| DatasetError::Generate(format!("annotations: {e}")))?;
    crate::write_atomically(&request.root.join(ANNOTATIONS), &text)
}

/// What the reader takes from an image entry: annotation and export tools (CVAT, Label
/// Studio, Roboflow, pycocotools) add keys, leave others out or write null where COCO has a
/// value; only these two are needed.
#[derive(Deserialize)]
struct ReadImage {
    id: u64,
    file_name: String,
}

/// What the reader takes from an annotation: its image, category and box. `bbox` may be
/// absent or null (a segmentation-only annotation): such an annotation is refused by id, never
/// silently dropped.
#[derive(Deserialize)]
struct ReadAnnotation {
    #[serde(default)]
    id: Option<serde_json::Value>,
    image_id: u64,
    category_id: u64,
    #[serde(default)]
    bbox: Option<[f64; 4]>,
}

/// An annotation file as read: `categories`, `info`, `licenses` and any other key are not
/// used; a file without `annotations` (COCO's test-set image lists) gives every image no box.
#[derive(Deserialize)]
struct ReadFile {
    images: Vec<ReadImage>,
    #[serde(default)]
    annotations: Option<Vec<ReadAnnotation>>,
}

/// Checks that an image's `file_name` names a file below the image folder: relative, `/`- or
/// `\\`-separated, no `..`, no root.
fn relative_name(name: &str) -> Option<std::path::PathBuf> {
    let parts: Vec<&str> = name.split(['/', '\\']).collect();
    let clean = !name.is_empty()
        && !name.starts_with(['/', '\\'])
        && !name.contains(':')
        && parts
            .iter()
            .all(|p| !p.is_empty() && *p != "." && *p != "..");
    clean.then(|| parts.iter().collect())
}

/// Lists a COCO-layout dataset in image-id order, each image with its boxes and categories.
/// Options for a user's export: `images=DIR` (the image folder, default `train2017`) and
/// `annotations=FILE` (default `annotations/instances_train2017.json`), both relative to the
/// dataset root; an image's `file_name` may hold subfolders of the image folder.
pub fn open(
    files: &Arc<dyn Files>,
    root: &Path,
    options: &crate::Options,
) -> Result<Source, DatasetError> {
    let annotations = options
        .get("annotations")
        .map_or(ANNOTATIONS, String::as_str);
    let image_dir = options.get("images").map_or("train2017", String::as_str);
    let path = root.join(annotations);
    let layout = |e: String| DatasetError::Layout {
        path: path.display().to_string(),
        message: e,
    };
    let text = files.read_file(&path).map_err(|e| {
        layout(format!(
            "{e}: expected {image_dir}/<images> and {annotations} (the COCO layout; the \
             options images=DIR and annotations=FILE name other places)"
        ))
    })?;
    let file: ReadFile = serde_json::from_slice(&text)
        .map_err(|e| layout(format!("not a COCO annotation file: {e}")))?;
    let mut boxes: BTreeMap<u64, (Vec<f32>, Vec<i32>)> = BTreeMap::new();
    for (index, a) in file.annotations.iter().flatten().enumerate() {
        let Some(bbox) = a.bbox else {
            let id =
                a.id.as_ref()
                    .map_or(format!("at index {index}"), |id| format!("id {id}"));
            return Err(layout(format!(
                "annotation {id} (image {}) has no bbox: the reader gives each image its boxes, \
                 and would drop this one",
                a.image_id
            )));
        };
        let entry = boxes.entry(a.image_id).or_default();
        entry.0.extend(bbox.iter().map(|v| *v as f32));
        entry.1.push(a.category_id.min(i32::MAX as u64) as i32);
    }
    let mut images: Vec<&ReadImage> = file.images.iter().collect();
    images.sort_by_key(|i| i.id);
    // Two images with one id would share its boxes, one getting them all and the other none.
    if let Some(pair) = images.windows(2).find(|w| w[0].id == w[1].id) {
        return Err(layout(format!(
            "images `{}` and `{}` both have id {}: annotations name their image by id, so \
             ids must be unique",
            pair[0].file_name, pair[1].file_name, pair[0].id
        )));
    }
    if let Some(orphan) = boxes
        .keys()
        .find(|&&id| images.binary_search_by_key(&id, |i| i.id).is_err())
    {
        return Err(layout(format!(
            "annotations name image id {orphan}, which no entry of `images` has"
        )));
    }
    let folder = root.join(image_dir);
    // Each folder an image lies in is listed once.
    let mut listings: HashMap<std::path::PathBuf, HashMap<String, Entry>> = HashMap::new();
    let mut items = Vec::with_capacity(images.len());
    for image in images {
        let Some(relative) = relative_name(&image.file_name) else {
            return Err(layout(format!(
                "image {} has file_name `{}`: expected a path relative to the image folder \
                 {image_dir}, without `..`",
                image.id, image.file_name
            )));
        };
        let dir = match relative.parent() {
            Some(parent) => folder.join(parent),
            None => folder.clone(),
        };
        let name = relative
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !listings.contains_key(&dir) {
            let listing = files_by_name(&**files, &dir).map_err(|e| DatasetError::Layout {
                path: dir.display().to_string(),
                message: format!(
                    "{e}: image {} (`{}`) is in this folder (the image folder is {image_dir}, \
                     the option images=DIR names another)",
                    image.id, image.file_name
                ),
            })?;
            listings.insert(dir.clone(), listing);
        }
        let (b, c) = boxes.remove(&image.id).unwrap_or_default();
        let k = c.len();
        let tensor = |shape: Vec<usize>, data| {
            Tensor::new(shape, data)
                .map(Field::Tensor)
                .map_err(|e| layout(e.to_string()))
        };
        let fields = vec![
            ("boxes".to_string(), tensor(vec![k, 4], TensorData::F32(b))?),
            (
                "categories".to_string(),
                tensor(vec![k], TensorData::I32(c))?,
            ),
        ];
        items.push(indexed_item(&listings[&dir], &dir, &name, &path, fields)?);
    }
    Ok(Source::new("coco", files, root, items))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_images_with_one_id_are_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("train2017")).unwrap();
        std::fs::create_dir_all(root.join("annotations")).unwrap();
        for name in ["000000000001.jpg", "000000000002.jpg"] {
            std::fs::write(root.join("train2017").join(name), b"not read here").unwrap();
        }
        let json = r#"{"images": [
            {"id": 7, "file_name": "000000000001.jpg", "width": 4, "height": 4},
            {"id": 7, "file_name": "000000000002.jpg", "width": 4, "height": 4}],
          "annotations": [{"id": 1, "image_id": 7, "category_id": 1,
            "bbox": [0, 0, 2, 2], "area": 4}],
          "categories": [{"id": 1, "name": "thing", "supercategory": "x"}]}"#;
        std::fs::write(root.join(ANNOTATIONS), json).unwrap();
        let err = match open(&crate::files::local(), root, &Default::default()) {
            Ok(_) => panic!("two images with one id were accepted"),
            Err(e) => e.to_string(),
        };
        for needle in ["000000000001.jpg", "000000000002.jpg", "id 7", ANNOTATIONS] {
            assert!(err.contains(needle), "no {needle:?} in {err}");
        }
    }

    /// A COCO file as labelling and export tools write one: nulls where the reader needs
    /// nothing, extra keys, images in subfolders, another image folder and annotation file.
    #[test]
    fn an_export_tools_coco_file_is_read_and_what_would_be_dropped_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for name in [
            "images/batch_1/a.jpg",
            "images/batch_2/b.jpg",
            "images/c.jpg",
        ] {
            std::fs::create_dir_all(root.join(name).parent().unwrap()).unwrap();
            std::fs::write(root.join(name), b"not read here").unwrap();
        }
        let export = |annotations: &str| {
            format!(
                r#"{{"info": null, "licenses": null,
                "images": [
                  {{"id": 2, "file_name": "batch_2/b.jpg", "width": null, "height": null,
                    "license": null, "coco_url": "", "date_captured": 0}},
                  {{"id": 1, "file_name": "batch_1/a.jpg", "width": 640, "height": 480}},
                  {{"id": 3, "file_name": "c.jpg"}}],
                "annotations": [{annotations}],
                "categories": [{{"id": 1, "name": "cat", "supercategory": null}},
                               {{"id": 2, "name": null}}]}}"#
            )
        };
        let good = r#"{"id": 1, "image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4],
            "area": null, "iscrowd": null, "segmentation": null, "attributes": {"occluded": false}},
            {"id": 2, "image_id": 2, "category_id": 1, "bbox": [0, 0, 5, 5]}"#;
        std::fs::create_dir_all(root.join("export")).unwrap();
        let write = |text: String| std::fs::write(root.join("export/coco.json"), text).unwrap();
        let options: crate::Options = [
            ("images".to_string(), "images".to_string()),
            ("annotations".to_string(), "export/coco.json".to_string()),
        ]
        .into();
        let local = crate::files::local();
        write(export(good));
        let source = open(&local, root, &options).unwrap();
        let names: Vec<String> = source
            .items
            .iter()
            .map(|i| i.path.strip_prefix(root).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "images/batch_1/a.jpg",
                "images/batch_2/b.jpg",
                "images/c.jpg"
            ]
        );
        let boxes = |i: usize| match source.sample(i).get("boxes") {
            Some(Field::Tensor(t)) => t.shape().to_vec(),
            _ => panic!("no boxes"),
        };
        assert_eq!(
            (boxes(0), boxes(1), boxes(2)),
            (vec![1, 4], vec![1, 4], vec![0, 4])
        );
        // Without the options, the standard layout is looked for and named.
        let standard = open(&local, root, &Default::default())
            .unwrap_err()
            .to_string();
        assert!(
            standard.contains("instances_train2017.json") && standard.contains("annotations=FILE")
        );
        let refused = |annotations: &str, file_name: &str| {
            write(export(annotations).replace("batch_1/a.jpg", file_name));
            match open(&local, root, &options) {
                Ok(_) => panic!("accepted {annotations} {file_name}"),
                Err(e) => e.to_string(),
            }
        };
        let no_box = refused(
            r#"{"id": 9, "image_id": 1, "category_id": 1, "bbox": null}"#,
            "batch_1/a.jpg",
        );
        assert!(
            no_box.contains("annotation id 9") && no_box.contains("no bbox"),
            "{no_box}"
        );
        let orphan = refused(
            r#"{"id": 1, "image_id": 44, "category_id": 1, "bbox": [0, 0, 1, 1]}"#,
            "batch_1/a.jpg",
        );
        assert!(orphan.contains("image id 44"), "{orphan}");
        let escape = refused(good, "../../etc/passwd");
        assert!(
            escape.contains("`../../etc/passwd`") && escape.contains("without `..`"),
            "{escape}"
        );
        let missing = refused(good, "batch_1/gone.jpg");
        assert!(
            missing.contains("gone.jpg") && missing.contains("not there"),
            "{missing}"
        );
        let no_folder = refused(good, "batch_9/a.jpg");
        assert!(
            no_folder.contains("batch_9") && no_folder.contains("image 1"),
            "{no_folder}"
        );
    }

    #[test]
    fn polygon_area_and_box_by_hand() {
        let square = [0.0, 0.0, 4.0, 0.0, 4.0, 3.0, 0.0, 3.0];
        assert_eq!(polygon_area(&square), 12.0);
        assert_eq!(polygon_bbox(&square), [0.0, 0.0, 4.0, 3.0]);
    }

    #[test]
    fn plans_have_coco_like_sizes_and_box_counts() {
        let (mut total, mut longer) = (0, true);
        for n in 0..200 {
            let (s, categories, _) = plan(1, n);
            longer &= s.width.max(s.height) == 640;
            assert!(categories.iter().all(|c| (1..=CATEGORIES).contains(c)));
            total += categories.len();
        }
        assert!(longer);
        let mean = total as f64 / 200.0;
        assert!((6.5..8.1).contains(&mean), "mean boxes per image {mean}");
    }
}
