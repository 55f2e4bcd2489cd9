use super::*;

#[test]
fn a_part_holds_what_the_floor_needs_and_a_shard_per_thread() {
    let records = [100, 100, 100, 100];
    assert_eq!(shards_holding(&records, 150.0, 1), 2);
    assert_eq!(shards_holding(&records, 200.0, 1), 2);
    assert_eq!(shards_holding(&records, 201.0, 1), 3);
    assert_eq!(shards_holding(&records, 10.0, 3), 3);
    assert_eq!(shards_holding(&records, 1e9, 1), 4);
    assert_eq!(shards_holding(&records, 10.0, 8), 4);
    // As many shards for each parallel read: 3 of 4 over two reads would leave one alone.
    assert_eq!(shards_holding(&records, 201.0, 2), 4);
    assert_eq!(shards_holding(&records, 150.0, 2), 2);
    let eleven = [63; 16];
    assert_eq!(shards_holding(&eleven, 640.0, 1), 11);
    assert_eq!(shards_holding(&eleven, 640.0, 2), 12);
    assert_eq!(shards_holding(&eleven, 640.0, 4), 12);
    assert_eq!(shards_holding(&eleven, 640.0, 3), 12);
    assert_eq!(shards_holding(&eleven, 1e9, 3), 16);
    assert_eq!(every_thread_count([1, 2]), 2);
    assert_eq!(every_thread_count([2, 1, 4, 8]), 8);
    assert_eq!(every_thread_count([3, 4]), 12);
    assert_eq!(every_thread_count([]), 1);
}

/// A probe stopped at its limit got through as many records as its samples stand for (a
/// fan-out's outputs per record counted back), never more than its part; one that ended
/// before the limit, or had none, read its whole part whatever its samples.
#[test]
fn a_probe_stopped_at_its_limit_counts_the_records_its_samples_stand_for() {
    let row = |online_s, samples| RunRow {
        online_s,
        samples,
        ..RunRow::default()
    };
    assert_eq!(
        records_got(&row(1.5, 3000), 52_581.0, 1.0, Some(1.5)),
        3000.0
    );
    assert_eq!(
        records_got(&row(1.62, 3000), 52_581.0, 1.0, Some(1.5)),
        3000.0
    );
    assert_eq!(records_got(&row(1.6, 3600), 12.0, 360.0, Some(1.5)), 10.0);
    assert_eq!(records_got(&row(1.6, 9000), 12.0, 360.0, Some(1.5)), 12.0);
    assert_eq!(records_got(&row(0.4, 4320), 12.0, 360.0, Some(1.5)), 12.0);
    assert_eq!(records_got(&row(3.0, 10), 187.0, 1.0, None), 187.0);
}

/// Outputs per record: a fan-out step's count where it runs online (raw files, and stores
/// made before it), one where the store holds its outputs or there is none.
#[test]
fn a_fan_out_counts_its_outputs_per_record_only_where_it_runs_online() {
    let nilm = workloads::load("nilm").expect("nilm is a built-in workload");
    let fan = nilm
        .fan_out_step()
        .expect("nilm fans out hours into windows");
    let per = datasets::find_kind(&nilm.spec.dataset.kind)
        .expect("cream is a kind")
        .samples_per_file as f64;
    assert!(per > 1.0);
    assert_eq!(outputs_per_record(&nilm, 0), per);
    assert_eq!(outputs_per_record(&nilm, fan), per);
    assert_eq!(outputs_per_record(&nilm, fan + 1), 1.0);
    let cv = workloads::load("cv").expect("cv is a built-in workload");
    assert_eq!(outputs_per_record(&cv, 0), 1.0);
}

/// A whole epoch within the margin of the part the floor needs is read whole; a longer
/// one, or one not timed, is cut to a part.
#[test]
fn a_store_about_as_long_as_its_part_is_read_whole() {
    let most = PART_MARGIN * WHOLE_MARGIN;
    assert!(whole_is_near_floor(1.5, 1.0));
    assert!(whole_is_near_floor(most, 1.0));
    assert!(!whole_is_near_floor(most * 1.01, 1.0));
    assert!(whole_is_near_floor(most * 0.2, 0.2));
    assert!(!whole_is_near_floor(40.0, 1.0));
    assert!(!whole_is_near_floor(f64::INFINITY, 1.0));
    assert!(!whole_is_near_floor(f64::NAN, 1.0));
}

/// An epoch timed beside foreign load or steal counts at what it would have lasted on the
/// CPU it had, so a part sized then is not short once the machine is quiet; the quiet
/// equivalent of a sizing epoch of 1.6 s at 50 % is read short of 1.15 floors and grows.
#[test]
fn an_epoch_timed_under_load_sizes_at_its_quiet_seconds() {
    let row = |online_s, foreign_load_pct, steal_pct| RunRow {
        online_s,
        foreign_load_pct,
        steal_pct,
        ..RunRow::default()
    };
    assert_eq!(quiet_seconds(&row(1.6, None, None), true), 1.6);
    assert!((quiet_seconds(&row(1.6, Some(10.0), Some(40.0)), true) - 0.8).abs() < 1e-9);
    assert!((quiet_seconds(&row(2.0, None, Some(100.0)), true) - 0.2).abs() < 1e-9);
    assert!(!short_of(1.6, 1.0, CHECK_MARGIN));
    let loaded = row(1.6, None, Some(50.0));
    assert!(short_of(quiet_seconds(&loaded, true), 1.0, CHECK_MARGIN));
    // Where load does not count, as it was.
    assert_eq!(quiet_seconds(&loaded, false), 1.6);
}

#[test]
fn a_part_stops_within_its_shards_only_where_that_cuts_a_fifth() {
    // Two shards of 19,000 tiny records where the floor needs 8,000: 4,000 of each.
    assert_eq!(per_shard(&[19_000, 19_000], 8_000.0), Some(4_000));
    assert_eq!(per_shard(&[19_000, 18_999], 8_001.0), Some(4_001));
    // Nearly all of them: the shards are read whole.
    assert_eq!(per_shard(&[100, 100], 170.0), None);
    assert_eq!(per_shard(&[100, 100], 150.0), Some(75));
    // A record per shard (20 MB samples) cannot be cut.
    assert_eq!(per_shard(&[1, 1, 1], 0.5), None);
    assert_eq!(per_shard(&[], 10.0), None);
}

/// A part whose cold epoch as a run reads it falls short of the floor is made the part
/// its measured rate needs; one that lasts it is kept; growth stops where the part can
/// hold no more (the whole store) and after `CHECK_ROUNDS` rounds.
#[test]
fn a_part_read_short_as_a_run_reads_it_grows_to_the_rate_measured() {
    let holding = |need: f64| LoaderPart::from((need.ceil() as usize).min(1000));
    let check = |start: usize, epochs: &[f64]| {
        let mut timed = epochs.iter();
        let mut grew = Vec::new();
        let part = checked_part(
            start.into(),
            1.0,
            holding,
            // 100 records a second, whatever the part.
            |p| Ok((p.n as f64, *timed.next().expect("timed past its rounds"))),
            |_, grown, was| grew.push((was.n, grown.n)),
        )
        .unwrap();
        (part.n, grew)
    };
    // 50 records in 0.5 s: 150 for the floor with the margin; they then last it.
    assert_eq!(check(50, &[0.5, 1.5]), (150, vec![(50, 150)]));
    // Long enough at once: kept, timed once.
    assert_eq!(check(50, &[1.2]), (50, vec![]));
    // Short three times: grown three times, timed no more.
    assert_eq!(
        check(10, &[0.5, 0.5, 0.5]),
        (270, vec![(10, 30), (30, 90), (90, 270)])
    );
    // The whole store already: nothing to grow into.
    assert_eq!(check(1000, &[0.5]), (1000, vec![]));
    assert!(CHECK_ROUNDS == 3 && short_of(1.1, 1.0, CHECK_MARGIN));
    assert!(!short_of(1.2, 1.0, CHECK_MARGIN));
    // A failed epoch stops the check with its error.
    let failed = checked_part(
        5.into(),
        1.0,
        holding,
        |_| anyhow::bail!("the loader died"),
        |_, _, _| {},
    );
    assert!(failed.unwrap_err().to_string().contains("loader died"));
}
