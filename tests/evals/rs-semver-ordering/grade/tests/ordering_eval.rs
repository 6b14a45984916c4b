use std::cmp::Ordering;

use verscmp::{latest, Version};

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

#[test]
fn spec_example_chain() {
    let chain = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.9.0",
        "1.10.0",
        "2.0.0-0",
        "2.0.0",
    ];
    for pair in chain.windows(2) {
        assert!(v(pair[0]) < v(pair[1]), "{} < {}", pair[0], pair[1]);
        assert!(v(pair[1]) > v(pair[0]), "{} > {}", pair[1], pair[0]);
    }
}

#[test]
fn release_beats_its_prereleases() {
    assert_eq!(v("1.0.0").cmp(&v("1.0.0-rc.9")), Ordering::Greater);
    assert_eq!(v("1.0.0-rc.9").cmp(&v("1.0.0")), Ordering::Less);
    assert!(v("1.0.1-alpha") > v("1.0.0"));
}

#[test]
fn identifiers() {
    assert!(v("1.0.0-2") < v("1.0.0-10"));
    assert!(v("1.0.0-999") < v("1.0.0-a"));
    assert!(v("1.0.0-B") < v("1.0.0-a"));
    assert!(v("1.0.0-a.b") < v("1.0.0-a.b.c"));
    assert_eq!(v("v3.1.4-x.7").cmp(&v("3.1.4-x.7")), Ordering::Equal);
}

#[test]
fn sorting() {
    let mut tags: Vec<Version> = [
        "2.0.0",
        "1.10.0",
        "1.2.0",
        "1.10.0-rc.2",
        "1.10.0-rc.10",
        "0.9.9",
    ]
    .into_iter()
    .map(v)
    .collect();
    tags.sort();
    let sorted: Vec<String> = tags.iter().map(Version::to_string).collect();
    assert_eq!(
        sorted,
        [
            "0.9.9",
            "1.2.0",
            "1.10.0-rc.2",
            "1.10.0-rc.10",
            "1.10.0",
            "2.0.0"
        ]
    );
}

#[test]
fn latest_version() {
    let tags: Vec<Version> = ["1.4.0", "1.10.0-beta", "1.9.3", "1.4.1"]
        .into_iter()
        .map(v)
        .collect();
    assert_eq!(latest(&tags, false), Some(&v("1.9.3")));
    assert_eq!(latest(&tags, true), Some(&v("1.10.0-beta")));
    let pre_only = [v("1.0.0-rc.1")];
    assert_eq!(latest(&pre_only, false), None);
    assert_eq!(latest(&[], true), None);
}
