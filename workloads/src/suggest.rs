//! "Did you mean": the known name closest to one the user typed, for every vocabulary prepbench
//! checks names against (workloads, strategies, ops, dataset kinds, codecs, storage profiles).

/// How a name is compared: case and `-`/`_` do not count (`Pixel-Centered` is `pixel_centered`).
fn folded(name: &str) -> String {
    name.to_lowercase().replace('-', "_")
}

/// The candidate most likely meant by `input`: within an edit distance (Damerau-Levenshtein,
/// so a swapped pair is one edit) of a third of the longer name (at least one), the closest
/// first and the earlier candidate on a tie; `None` when nothing is that close.
pub fn closest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = folded(input);
    let mut best: Option<(usize, &'a str)> = None;
    for candidate in candidates {
        if candidate == input {
            return None; // known as typed: nothing to suggest
        }
        let known = folded(candidate);
        let distance = strsim::damerau_levenshtein(&typed, &known);
        let allowed = (typed.chars().count().max(known.chars().count()) / 3).max(1);
        if distance <= allowed && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// `" (did you mean `NAME`?)"` for the closest candidate, or nothing: appended to the name an
/// error refuses, before it lists every allowed name.
pub fn did_you_mean<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(input, candidates)
        .map(|name| format!(" (did you mean `{name}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_the_name_meant_and_strangers_find_none() {
        let workloads = ["cv", "cv2-jpg", "cv2-png", "nlp", "nilm", "mp3", "flac"];
        assert_eq!(closest("cvv", workloads), Some("cv"));
        assert_eq!(closest("CV2_JPG", workloads), Some("cv2-jpg"));
        assert_eq!(closest("nilmm", workloads), Some("nilm"));
        assert_eq!(closest("resnet", workloads), None);
        let kinds = ["imagenet", "coco", "openwebtext", "librispeech"];
        assert_eq!(closest("imagnet", kinds), Some("imagenet"));
        assert_eq!(
            closest("imagenet", kinds),
            None,
            "an exact name needs no suggestion"
        );
        assert_eq!(closest("Imagenet", kinds), Some("imagenet"));
        assert_eq!(closest("librispeach", kinds), Some("librispeech"));
        let strategies = [
            "unprocessed",
            "concatenated",
            "decoded",
            "resized",
            "pixel-centered",
        ];
        assert_eq!(closest("unprocesed", strategies), Some("unprocessed"));
        assert_eq!(
            closest("pixel_centered", strategies),
            Some("pixel-centered")
        );
        assert_eq!(
            closest("decdoed", strategies),
            Some("decoded"),
            "a swapped pair"
        );
        let ops = ["grayscale", "pixel_center", "decode_jpeg", "resize_shorter"];
        assert_eq!(closest("greyscale", ops), Some("grayscale"));
        assert_eq!(closest("pixel_centered", ops), Some("pixel_center"));
        assert_eq!(closest("decode_jpg", ops), Some("decode_jpeg"));
        assert_eq!(closest("normalize", ops), None);
        assert_eq!(
            closest("zst", ["none", "lz4", "gzip", "zlib", "zstd"]),
            Some("zstd")
        );
        assert_eq!(did_you_mean("cephh", ["local", "paper-ceph-hdd"]), "");
        assert_eq!(
            did_you_mean("locall", ["local", "paper-ceph-hdd"]),
            " (did you mean `local`?)"
        );
    }
}
