//! The chart writer's layout: ticks, labels, bars, titles, legends.

use super::axis::Axis;
use super::chart::{overlap, Rect};
use super::*;

fn chart() -> Chart {
    Chart {
        title: "a & b".into(),
        x_label: "storage per sample (MB)".into(),
        y_label: "throughput (samples/s)".into(),
        x_scale: Scale::Log,
        y_scale: Scale::Linear,
        x_categories: Vec::new(),
        x_ticks: Vec::new(),
        y_from_zero: true,
        series: vec![Series {
            name: "cold".into(),
            points: vec![(0.1, 600.0), (1.0, 1500.0), (0.0, 5.0)],
            labels: vec!["raw".into(), "dec".into(), "zero".into()],
            line: true,
            ..Series::default()
        }],
    }
}

#[test]
fn svg_has_axes_labels_points_and_legend() {
    let svg = chart().to_svg();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(svg.contains("storage per sample (MB)") && svg.contains("throughput (samples/s)"));
    assert!(svg.contains("a &amp; b"), "title is escaped");
    assert_eq!(
        svg.matches("<circle").count(),
        2 + 1,
        "a zero cannot sit on a log axis (and the legend's mark is a dot on a line)"
    );
    assert!(svg.contains(">raw<") && svg.contains(">cold<"));
    assert!(
        svg.contains(">0.1<") && svg.contains(">1<"),
        "log ticks at decades"
    );
}

#[test]
fn linear_ticks_are_round_and_cover_the_data() {
    let axis = Axis::new(&[3.0, 97.0], Scale::Linear, true);
    assert_eq!(axis.ticks, vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
    assert_eq!(format_number(0.05), "0.05");
    assert_eq!(format_number(1500.0), "1500");
    assert_eq!(format_number(2.5), "2.5");
}

/// The boxes of the point labels written in an SVG (by the estimate the placement uses).
fn label_boxes(svg: &str) -> Vec<Rect> {
    svg.lines()
        .filter(|l| l.starts_with("<text x=") && l.contains(r#"font-size="11""#))
        .map(|l| {
            let num = |key: &str| -> f64 {
                let rest = &l[l.find(key).unwrap() + key.len()..];
                rest[..rest.find('"').unwrap()].parse().unwrap()
            };
            let text = &l[l.find('>').unwrap() + 1..l.rfind("</text>").unwrap()];
            let (x, y) = (num("x=\""), num("y=\""));
            (x, y - 9.0, x + text_width(text, 11.0), y + 2.0)
        })
        .collect()
}

#[test]
fn labels_of_nearby_points_do_not_collide() {
    // Six strategies within a few pixels of each other (unprocessed and concatenated sit
    // on top of each other in the paper's CV figure).
    let points = vec![
        (1.0, 100.0),
        (1.02, 101.0),
        (1.04, 99.0),
        (0.98, 100.5),
        (5.0, 300.0),
        (5.1, 302.0),
    ];
    let labels: Vec<String> = [
        "unprocessed",
        "concatenated",
        "decoded",
        "resized",
        "pixel-centered",
        "random-crop",
    ]
    .map(String::from)
    .to_vec();
    let mut c = chart();
    c.series = vec![Series::labelled_dots("strategies", points, labels)];
    let svg = c.to_svg();
    let boxes = label_boxes(&svg);
    assert_eq!(boxes.len(), 6, "{svg}");
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            assert_eq!(overlap(*a, *b), 0.0, "{a:?} and {b:?} overlap");
        }
    }
}

#[test]
fn given_ticks_error_bars_long_titles_and_legend_marks() {
    let mut c = chart();
    c.x_scale = Scale::Linear;
    c.x_ticks = vec![1.0, 2.0, 4.0, 8.0];
    c.title = "a workload with a long name under storage paper-ceph-hdd, consumer 32x100ms: thread scaling (codec none)".into();
    c.series = vec![
        Series {
            name: "decoded".into(),
            points: vec![(1.0, 100.0), (2.0, 190.0), (4.0, 350.0), (8.0, 600.0)],
            line: true,
            ..Series::default()
        }
        .with_intervals(vec![Some((-40.0, 240.0)), None, Some((300.0, 400.0)), None]),
        Series::dashed_line("front", vec![(1.0, 50.0), (8.0, 50.0)]),
    ];
    let svg = c.to_svg();
    for tick in [">1<", ">2<", ">4<", ">8<"] {
        assert!(svg.contains(tick), "tick {tick}");
    }
    assert!(
        !svg.contains(">1.5<") && !svg.contains(">3<"),
        "only the given ticks"
    );
    assert_eq!(svg.matches("<path d=\"M").count(), 2, "two error bars");
    assert!(svg.contains("95 % CI"));
    assert!(
        !svg.contains(">-"),
        "an interval below zero ends at the zero axis"
    );
    // The title is wrapped into lines that each fit the picture.
    let width: f64 = {
        let w = &svg[svg.find("width=\"").unwrap() + 7..];
        w[..w.find('"').unwrap()].parse().unwrap()
    };
    let titles: Vec<&str> = svg
        .lines()
        .filter(|l| l.contains(r#"font-weight="bold""#))
        .collect();
    assert!(titles.len() >= 2, "wrapped: {titles:?}");
    for t in titles {
        let text = &t[t.find('>').unwrap() + 1..t.rfind("</text>").unwrap()];
        assert!(text_width(text, 15.0) <= width, "{text}");
    }
    // Legend: the line series shows a line and a dot; the dashed one a dashed line only.
    assert_eq!(svg.matches("stroke-dasharray").count(), 2);
    assert_eq!(svg.matches("<circle").count(), 4 + 1);
}

#[test]
fn narrow_log_ranges_get_round_ticks_inside_the_range() {
    let axis = Axis::new(&[0.92, 1.0, 1.07], Scale::Log, false);
    assert!(axis.lo < 0.92 && axis.hi > 1.07 && axis.hi / axis.lo < 1.5);
    assert!(axis.ticks.len() >= 3, "{:?}", axis.ticks);
    assert!(axis.ticks.iter().all(|t| *t >= axis.lo && *t <= axis.hi));
    assert!(axis.ticks.contains(&1.0));
}

#[test]
fn forest_rows_bars_reference_and_band() {
    let forest = Forest {
        title: "Throughput B / A".into(),
        subtitle: "A: x; B: y".into(),
        x_label: "ratio".into(),
        rows: vec![
            ForestRow {
                label: "decoded · 2".into(),
                value: 1.5,
                interval: Some((1.4, 1.6)),
                group: 0,
            },
            ForestRow {
                label: "raw · 2".into(),
                value: 0.99,
                interval: None,
                group: 2,
            },
        ],
        groups: vec![
            ("faster".into(), "#2ca02c"),
            ("slower".into(), "#d62728"),
            ("no change".into(), "#555555"),
        ],
        reference: 1.0,
        band: Some((1.0 / 1.02, 1.02)),
        band_label: "±2 % noise".into(),
    };
    let svg = forest.to_svg();
    assert!(svg.contains(">decoded · 2<") && svg.contains(">raw · 2<"));
    assert_eq!(svg.matches("<path").count(), 1, "one interval");
    // Rows' dots plus the legend's two groups in use (not "slower").
    assert_eq!(svg.matches("<circle").count(), 2 + 2);
    assert!(!svg.contains(">slower<") && svg.contains("±2 % noise"));
}
