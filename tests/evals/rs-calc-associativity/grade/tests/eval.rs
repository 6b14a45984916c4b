use calc::{eval, Error};

fn ok(input: &str) -> f64 {
    eval(input).unwrap_or_else(|e| panic!("{input}: {e}"))
}

#[test]
fn precedence() {
    assert_eq!(ok("2 + 3 * 4"), 14.0);
    assert_eq!(ok("2 * 3 + 4"), 10.0);
    assert_eq!(ok("(2 + 3) * 4"), 20.0);
    assert_eq!(ok("2 * 3 ^ 2"), 18.0);
}

#[test]
fn subtraction_is_left_associative() {
    assert_eq!(ok("10 - 3 - 2"), 5.0);
    assert_eq!(ok("1 - 1 + 1"), 1.0);
    assert_eq!(ok("10 - 2 + 3 - 1"), 10.0);
}

#[test]
fn division_is_left_associative() {
    assert_eq!(ok("100 / 10 / 5"), 2.0);
    assert_eq!(ok("8 / 4 * 2"), 4.0);
    assert_eq!(ok("2 * 6 / 3 / 2"), 2.0);
}

#[test]
fn power_is_right_associative() {
    assert_eq!(ok("2 ^ 3 ^ 2"), 512.0);
    assert_eq!(ok("2 ^ -1"), 0.5);
}

#[test]
fn unary_minus() {
    assert_eq!(ok("-(2 + 3)"), -5.0);
    assert_eq!(ok("3 - -2"), 5.0);
    assert_eq!(ok("-2 ^ 2"), -4.0);
}

#[test]
fn errors() {
    assert_eq!(eval("1 / (2 - 2)"), Err(Error::DivisionByZero));
    assert_eq!(eval("2 +"), Err(Error::UnexpectedEnd));
    assert_eq!(eval("2 $ 3"), Err(Error::UnexpectedChar('$', 2)));
    assert!(eval("(1 + 2").is_err());
}
