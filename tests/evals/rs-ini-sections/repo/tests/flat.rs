use tinyini::Ini;

#[test]
fn flat_pairs() {
    let ini = Ini::parse("name = demo\n\nport=8080\ngreeting = \"hello world\"\n").unwrap();
    assert_eq!(ini.get("name"), Some("demo"));
    assert_eq!(ini.get("port"), Some("8080"));
    assert_eq!(ini.get("greeting"), Some("hello world"));
    assert_eq!(ini.get("missing"), None);
    assert_eq!(ini.len(), 3);
}

#[test]
fn last_value_wins() {
    let ini = Ini::parse("a = 1\na = 2\n").unwrap();
    assert_eq!(ini.get("a"), Some("2"));
}

#[test]
fn missing_equals_is_an_error() {
    let err = Ini::parse("a = 1\n\njust words\n").unwrap_err();
    assert_eq!(err.line, 3);
    assert!(err.to_string().starts_with("line 3:"));
}
