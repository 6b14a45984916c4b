use feedline::text::{pad_right, truncate};
use feedline::{format_headline, Entry};

#[test]
fn truncate_ascii() {
    assert_eq!(truncate("hello world", 20), "hello world");
    assert_eq!(truncate("hello world", 11), "hello world");
    assert_eq!(truncate("hello world", 8), "hello w…");
    assert_eq!(truncate("hello", 1), "…");
    assert_eq!(truncate("hello", 0), "");
}

#[test]
fn pad() {
    assert_eq!(pad_right("[bbc]", 8), "[bbc]   ");
    assert_eq!(pad_right("[reuters]", 4), "[reuters]");
}

#[test]
fn headline() {
    let entry = Entry {
        source: "ap".into(),
        title: "Markets rally as inflation cools for a third month".into(),
    };
    let line = format_headline(&entry, 6, 40);
    assert_eq!(line, "[ap]   Markets rally as inflation cools…");
    assert_eq!(line.chars().count(), 40);
}
