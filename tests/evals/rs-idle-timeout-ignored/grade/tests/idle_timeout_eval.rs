use relay::{Config, Server};

#[test]
fn configured_timeout_applies_at_startup() {
    let mut server = Server::new(Config::parse("idle_timeout_secs = 30\n").unwrap());
    let a = server.accept("10.0.0.1:5000", 0).unwrap();
    let b = server.accept("10.0.0.2:5000", 0).unwrap();
    server.traffic(b, 20).unwrap();
    assert!(server.tick(29).is_empty());
    assert_eq!(server.tick(30), vec![a]);
    assert_eq!(server.tick(50), vec![b]);
}

#[test]
fn longer_timeouts_work_too() {
    let mut server = Server::new(Config::parse("idle_timeout_secs = 900\n").unwrap());
    server.accept("10.0.0.1:5000", 0).unwrap();
    assert!(server.tick(600).is_empty());
    assert_eq!(server.tick(900).len(), 1);
}

#[test]
fn reload_applies_the_new_timeout() {
    let mut server = Server::new(Config::default());
    let a = server.accept("10.0.0.1:5000", 0).unwrap();
    assert!(server.tick(100).is_empty());
    server.reload(Config::parse("idle_timeout_secs = 60\n").unwrap());
    assert_eq!(server.tick(100), vec![a]);
    let b = server.accept("10.0.0.2:5000", 100).unwrap();
    assert!(server.tick(159).is_empty());
    assert_eq!(server.tick(160), vec![b]);
    assert_eq!(server.config().idle_timeout_secs, 60);
}
