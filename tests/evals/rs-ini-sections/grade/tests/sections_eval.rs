use tinyini::Ini;

const CONFIG: &str = "\
; deploy settings
name = shop
# the web tier
[server]
host = 0.0.0.0
port = 8080

[  database  ]
url = \"postgres://localhost/shop\"
pool = 5
  ; indented comment
[server]
port = 9090
[cache]
";

#[test]
fn keys_before_any_header_stay_top_level() {
    let ini = Ini::parse(CONFIG).unwrap();
    assert_eq!(ini.get("name"), Some("shop"));
    assert_eq!(ini.get("host"), None);
    assert_eq!(ini.get("port"), None);
}

#[test]
fn keys_in_sections() {
    let ini = Ini::parse(CONFIG).unwrap();
    assert_eq!(ini.get_in("server", "host"), Some("0.0.0.0"));
    assert_eq!(ini.get_in("server", "port"), Some("9090"));
    assert_eq!(
        ini.get_in("database", "url"),
        Some("postgres://localhost/shop")
    );
    assert_eq!(ini.get_in("database", "pool"), Some("5"));
    assert_eq!(ini.get_in("database", "host"), None);
    assert_eq!(ini.get_in("nope", "host"), None);
    assert_eq!(ini.get_in("server", "name"), None);
}

#[test]
fn sections_in_order_of_first_appearance() {
    let ini = Ini::parse(CONFIG).unwrap();
    assert_eq!(ini.sections(), vec!["server", "database", "cache"]);
    let ini = Ini::parse("[zeta]\na=1\n[alpha]\nb=2\n[mid]\n").unwrap();
    assert_eq!(ini.sections(), vec!["zeta", "alpha", "mid"]);
    assert!(Ini::parse("a = 1\n").unwrap().sections().is_empty());
}

#[test]
fn comments_are_skipped_everywhere() {
    let ini = Ini::parse("# top\n;x\n[s]\n# k = v\nk = real\n").unwrap();
    assert_eq!(ini.get_in("s", "k"), Some("real"));
    assert_eq!(ini.get("# k"), None);
}

#[test]
fn malformed_headers() {
    let err = Ini::parse("a = 1\n[server\nport = 1\n").unwrap_err();
    assert_eq!(err.line, 2);
    let err = Ini::parse("[ok]\n\n\n[]\n").unwrap_err();
    assert_eq!(err.line, 4);
    let err = Ini::parse("[ok]\nno equals here\n").unwrap_err();
    assert_eq!(err.line, 2);
}
