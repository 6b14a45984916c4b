use feedline::text::truncate;
use feedline::{format_headline, Entry};

#[test]
fn cuts_on_characters_not_bytes() {
    let title = "Crème brûlée recipe wins the café award in Lyon";
    assert_eq!(truncate(title, 37), "Crème brûlée recipe wins the café aw…");
    assert_eq!(truncate(title, 6), "Crème…");
    assert_eq!(truncate("日本語のニュース", 4), "日本語…");
    assert_eq!(truncate("👍👍👍", 2), "👍…");
}

#[test]
fn leaves_strings_that_fit_alone() {
    assert_eq!(truncate("café!", 5), "café!");
    assert_eq!(truncate("naïve", 5), "naïve");
    assert_eq!(truncate("日本語", 3), "日本語");
    assert_eq!(truncate("Zürich", 7), "Zürich");
}

#[test]
fn result_never_exceeds_max_characters() {
    let title = "Ça va: Québec élève l'été à Montréal, où l'on fête";
    for max in 0..=title.chars().count() + 2 {
        let cut = truncate(title, max);
        assert!(cut.chars().count() <= max, "max {max}: {cut:?}");
        if max >= title.chars().count() {
            assert_eq!(cut, title);
        } else if max > 0 {
            assert!(cut.ends_with('…'));
            assert_eq!(cut.chars().count(), max);
        }
    }
}

#[test]
fn headline_keeps_its_width() {
    let entry = Entry {
        source: "lemonde".into(),
        title: "Crème brûlée recipe wins the café award in Lyon".into(),
    };
    let line = format_headline(&entry, 10, 48);
    assert_eq!(line, "[lemonde]  Crème brûlée recipe wins the café aw…");
    assert_eq!(line.chars().count(), 48);
}
