//! Claims the runs cannot test: network claims on local runs only, and claims with nothing
//! to judge, say why.

use super::*;

#[test]
fn local_disk_lines_never_count_for_a_network_claim() {
    let mut obs = published::observations();
    // The same figures measured on a local disk only: findings 2 and 3 are not testable,
    // their lines are contrast.
    for p in &mut obs.pipelines {
        p.storage = Storage::Local;
    }
    let all = verdicts(&obs);
    for id in ["2a", "2b", "3a", "3c"] {
        let (_, verdict, detail) = all.iter().find(|(i, ..)| *i == id).unwrap();
        assert_eq!(*verdict, Verdict::NotTestable, "{id}: {detail}");
    }
    let f2 = &judge(&obs)[1];
    assert!(f2.sub_claims[0]
        .contrast
        .iter()
        .any(|l| l.contains("(local disk)")));
}

#[test]
fn a_claim_about_compressed_stores_with_none_to_judge_says_why() {
    // No store compressed at all (a sweep of codec none only): 3b and 3d say so.
    let (verdict, detail) = against("3b", |o| each_codec_cleared(o, |_| true));
    assert_eq!(verdict, Verdict::NotTestable, "{detail}");
    assert!(detail.contains("no store was compressed"), "{detail}");
    let (verdict, detail) = against("3d", |o| each_codec_cleared(o, |_| true));
    assert_eq!(verdict, Verdict::NotTestable, "{detail}");
    assert!(detail.contains("no store was compressed"), "{detail}");
    // Compressed stores, but none of the float strategies 3b is about.
    let (verdict, detail) = against("3b", |o| each_codec_cleared(o, |s| s == "pixel-centered"));
    assert_eq!(verdict, Verdict::NotTestable, "{detail}");
    assert!(
        detail.contains("no float strategy (cv pixel-centered"),
        "{detail}"
    );
}

/// The codecs of every strategy whose name `clear` picks removed.
fn each_codec_cleared(obs: &mut Observations, clear: impl Fn(&str) -> bool) {
    for (_, s) in strategies_mut(obs) {
        if clear(&s.name) {
            s.codecs.clear();
        }
    }
}
