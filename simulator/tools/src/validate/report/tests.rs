//! The validation tables and their figures on hand-made rows.

use super::*;

fn rows() -> Vec<Row> {
    vec![
        Row {
            name: "ring".into(),
            ranks: 2,
            measured: vec![1.0, 3.0, 2.0],
            traced_s: Some(2.1),
            traced: vec![2.1],
            offline_s: Some(2.2),
            online_s: None,
            offline_band: None,
            note: String::new(),
            ..Row::default()
        },
        Row {
            name: "jacobi2d".into(),
            ranks: 2,
            measured: vec![4.0, 6.0],
            traced_s: Some(5.0),
            traced: vec![5.5, 4.5, 5.0],
            offline_s: Some(4.5),
            online_s: Some(5.5),
            online: vec![5.5, 6.0],
            offline_band: Some((4.4, 4.7)),
            calibrated: vec![4.5, 4.0, 5.0],
            note: "x".into(),
            ..Row::default()
        },
        Row { name: "broken".into(), ranks: 2, note: "plain run failed".into(), ..Row::default() },
    ]
}

#[test]
fn a_renote_replaces_the_parts_it_names() {
    let mut r = Row::default();
    r.note("offline: traced run a/, first");
    r.note("timed by the interposer");
    r.renote("offline: traced run", "offline: traced run b/, second");
    assert_eq!(r.note, "timed by the interposer; offline: traced run b/, second");
    let mut empty = Row::default();
    empty.renote("x", "y");
    assert_eq!(empty.note, "y");
}

#[test]
fn the_lower_median_index_names_one_of_the_values() {
    assert_eq!(lower_median_index(&[0.3, 0.1, 0.2]), Some(2));
    assert_eq!(lower_median_index(&[0.4, 0.1, 0.3, 0.2]), Some(3));
    assert_eq!(lower_median_index(&[]), None);
}

#[test]
fn errors_are_relative_to_the_median_of_the_plain_runs() {
    let r = rows();
    assert_eq!(r[0].measured_s(), Some(2.0));
    assert_eq!(r[1].measured_s(), Some(5.0));
    assert!((r[0].offline_error_pct().unwrap() - 10.0).abs() < 1e-9);
    assert!((r[1].offline_error_pct().unwrap() + 10.0).abs() < 1e-9);
    assert_eq!(r[0].online_error_pct(), None);
    let s = summarize(r.iter().map(Row::offline_error_pct)).unwrap();
    assert_eq!(s.rows, 2);
    assert!((s.median_abs_pct - 10.0).abs() < 1e-9 && (s.max_abs_pct - 10.0).abs() < 1e-9);
    assert!(summarize(std::iter::once(None)).is_none());
}

#[test]
fn every_row_appears_in_every_form() {
    let r = rows();
    let t = table(&r);
    assert!(t.lines().nth(3).unwrap().starts_with("broken") && t.contains("n/a"), "{t}");
    assert!(t.contains("offline: median |error| 10.0 %, max 10.0 % over 2 rows"), "{t}");
    let md = markdown(&r, "pre");
    assert!(md.contains("| ring | 2 | 3 | 2.0000 | 2.1000 | 2.2000 | n/a | +10.0 | n/a | 100.0 | n/a |"), "{md}");
    assert!(md.contains("- broken: plain run failed"));
    let c = csv(&r);
    assert_eq!(c.lines().count(), 4);
    let ring = c.lines().nth(1).unwrap();
    assert!(ring.starts_with("ring,2,2e0,2.1e0,2.2e0,,1") && ring.ends_with(",,1e0;3e0;2e0,,,1e2,,2.1e0,,,,,"), "{c}");
    let jacobi = c.lines().nth(2).unwrap();
    assert!(
        jacobi.contains(",4.4e0,4.7e0,4e1,2e1,5.5e0;4.5e0;5e0,") && jacobi.ends_with(",4.5e0;4e0;5e0,8.695652173913043e0,5.5e0;6e0,x"),
        "{c}"
    );
    let mut noted = r[0].clone();
    noted.note = "plain run failed: \"x\", then y".into();
    let c = csv(&[noted]);
    let back: Vec<csv::StringRecord> = csv::Reader::from_reader(c.as_bytes()).records().collect::<Result<_, _>>().unwrap();
    assert_eq!((back.len(), &back[0][18]), (1, "plain run failed: \"x\", then y"), "{c}");
}

#[test]
fn spread_is_the_range_over_the_median_in_every_form() {
    assert_eq!(spread_pct(&[]), None);
    assert_eq!(spread_pct(&[2.0]), None);
    assert_eq!(spread_pct(&[0.0, 0.0]), None);
    assert!((spread_pct(&[1.0, 1.1, 0.9]).unwrap() - 20.0).abs() < 1e-9);
    assert!((spread_pct(&[4.0, 6.0]).unwrap() - 40.0).abs() < 1e-9);
    let r = rows();
    assert!((r[1].plain_spread_pct().unwrap() - 40.0).abs() < 1e-9);
    assert!((r[1].traced_spread_pct().unwrap() - 20.0).abs() < 1e-9);
    assert_eq!(r[0].traced_spread_pct(), None, "one traced run has no spread");
    let t = table(&r);
    let head: Vec<&str> = t.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(head[8..], ["plain_spread_%", "traced_spread_%", "calib_spread_%"], "{t}");
    let jacobi: Vec<&str> = t.lines().nth(2).unwrap().split_whitespace().collect();
    assert_eq!((jacobi[0], jacobi[8], jacobi[9], jacobi[10]), ("jacobi2d", "40.0", "20.0", "22.2"), "{t}");
    let ring: Vec<&str> = t.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!((ring[8], ring[9], ring[10]), ("100.0", "n/a", "n/a"), "{t}");
    let md = markdown(&r, "pre");
    assert!(md.contains("| plain spread % | traced spread % | calibration spread % |"), "{md}");
    assert!(md.contains("| -10.0 | +10.0 | 40.0 | 20.0 | 22.2 |"), "{md}");
    let c = csv(&r);
    let mut reader = csv::Reader::from_reader(c.as_bytes());
    let head = reader.headers().unwrap().clone();
    let col = |name: &str| head.iter().position(|h| h == name).unwrap();
    let back: Vec<csv::StringRecord> = reader.records().collect::<Result<_, _>>().unwrap();
    let num = |row: usize, name: &str| back[row][col(name)].parse::<f64>().ok();
    assert_eq!((num(1, "plain_spread_pct"), num(1, "traced_spread_pct")), (Some(40.0), Some(20.0)), "{c}");
    assert_eq!((num(0, "plain_spread_pct"), num(0, "traced_spread_pct")), (Some(100.0), None), "{c}");
    assert_eq!(&back[1][col("traced_runs_s")], "5.5e0;4.5e0;5e0");
    assert!((num(1, "calibration_spread_pct").unwrap() - 100.0 / 4.5).abs() < 1e-9, "{c}");
    assert_eq!((num(0, "calibration_spread_pct"), &back[1][col("calibrated_s")]), (None, "4.5e0;4e0;5e0"), "{c}");
    assert_eq!((num(2, "plain_spread_pct"), num(2, "traced_spread_pct")), (None, None), "{c}");
    assert_eq!(&back[1][col("online_runs_s")], "5.5e0;6e0");
    assert!((num(1, "online_spread_pct").unwrap() - 100.0 * 0.5 / 5.75).abs() < 1e-9, "{c}");
    assert_eq!(num(0, "online_spread_pct"), None, "{c}");
    let j: serde_json::Value = serde_json::from_str(&json(&r)).unwrap();
    assert_eq!(j[1]["plain_spread_pct"].as_f64(), Some(40.0));
    assert_eq!(j[1]["traced_spread_pct"].as_f64(), Some(20.0));
    assert_eq!(j[1]["traced_runs_s"], serde_json::json!([5.5, 4.5, 5.0]));
    assert_eq!(j[1]["calibrated_s"], serde_json::json!([4.5, 4.0, 5.0]));
    assert!((j[1]["calibration_spread_pct"].as_f64().unwrap() - 100.0 / 4.5).abs() < 1e-9);
    assert_eq!(j[1]["online_runs_s"], serde_json::json!([5.5, 6.0]));
    assert!(j[0]["traced_spread_pct"].is_null() && j[2]["measured_s"].is_null(), "{j}");
}

#[test]
fn the_plot_is_an_svg_with_the_diagonal() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("v.svg");
    plot_svg(&p, "t", &rows()).unwrap();
    let svg = std::fs::read_to_string(&p).unwrap();
    assert!(svg.contains("<svg") && svg.contains("jacobi2d") && svg.contains("y = x"));
    assert!(plot_svg(&dir.path().join("v.png"), "t", &rows()).unwrap_err().contains("only SVG"));
}
