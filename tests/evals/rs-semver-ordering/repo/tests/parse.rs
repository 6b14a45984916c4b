use verscmp::{Identifier, Version};

#[test]
fn parses_and_prints() {
    let v = Version::parse("v1.2.3-rc.1").unwrap();
    assert_eq!((v.major, v.minor, v.patch), (1, 2, 3));
    assert_eq!(
        v.pre,
        vec![Identifier::Alpha("rc".into()), Identifier::Numeric(1)]
    );
    assert_eq!(v.to_string(), "1.2.3-rc.1");
    assert!(v.is_prerelease());
    assert_eq!(Version::parse("10.0.1").unwrap(), Version::new(10, 0, 1));
}

#[test]
fn rejects_bad_versions() {
    for bad in [
        "1.2",
        "1.2.3.4",
        "01.2.3",
        "1.2.x",
        "1.2.3-",
        "1.2.3-a..b",
        "1.2.3-01",
    ] {
        assert!(Version::parse(bad).is_err(), "{bad}");
    }
}
