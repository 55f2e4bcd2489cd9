//! What settling adds trials to: the runs a check's figure reads, not every run of its
//! strategy.

use super::*;

#[test]
fn a_check_settles_on_the_runs_its_figure_reads_alone() {
    use crate::results::CacheState::{App, AppFill, Cold, Warm};
    use std::collections::BTreeSet;
    // NILM's last strategy run cold (then warm) and with the application cache, at 1 and 8
    // threads: the page cache's checks and thread scaling read the cold runs, 4b the
    // application cache's, 4c both; a trial of the other kind is a run no figure reads.
    let states = [Cold, Warm, AppFill, App];
    let mine: Vec<CellKey> = (states.iter())
        .flat_map(|&c| [1, 8].map(|t| key("aggregated", Codec::None, t, c)))
        .collect();
    let mut obs = published::observations();
    for p in obs.pipelines.iter_mut().filter(|p| p.pipeline == "nilm") {
        let last = p.strategies.last_mut().unwrap();
        last.page_cache = Some(Ok(noisy(1.5, 0.3, 3)));
        last.app_cache = Some(Ok(noisy(1.5, 0.3, 3)));
        last.app_over_page = Some(Ok(noisy(1.2, 0.3, 3)));
        last.scaling = Some(Scaling {
            from: 1,
            to: 8,
            speedup: Ok(noisy(1.2, 0.3, 3)),
            mechanism: None,
        });
        last.cells = mine.clone();
    }
    let mut seen = BTreeSet::new();
    for sub in judge(&obs).iter().flat_map(|f| &f.sub_claims) {
        let last = |c: &&Check| c.subject.contains("nilm") && c.subject.contains("aggregated");
        for check in sub.checks.iter().filter(last) {
            let read: BTreeSet<_> = check.cells.iter().map(|k| k.cache).collect();
            let want: BTreeSet<_> = match sub.id {
                "4b" => [AppFill, App].into(),
                "4c" => states.into(),
                _ => [Cold, Warm].into(),
            };
            assert_eq!(read, want, "{} {}", sub.id, check.subject);
            seen.insert(sub.id);
        }
    }
    for id in ["4a", "4b", "4c"] {
        assert!(seen.contains(id), "{id} judged on NILM: {seen:?}");
    }
    assert!(seen.iter().any(|id| id.starts_with('6')), "{seen:?}");
}
