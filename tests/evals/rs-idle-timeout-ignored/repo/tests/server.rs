use relay::{Config, Error, Server};

#[test]
fn parses_config() {
    let config =
        Config::parse("listen = 0.0.0.0:7000 # all\nmax_clients = 2\nidle_timeout_secs = 30\n")
            .unwrap();
    assert_eq!(config.listen, "0.0.0.0:7000");
    assert_eq!(config.max_clients, 2);
    assert_eq!(config.idle_timeout_secs, 30);
    assert!(Config::parse("max_clients = 0").is_err());
    assert!(Config::parse("colour = blue").is_err());
}

#[test]
fn capacity_and_reload() {
    let mut server = Server::new(Config::parse("max_clients = 1").unwrap());
    server.accept("10.0.0.1:5000", 0).unwrap();
    assert_eq!(
        server.accept("10.0.0.2:5000", 0),
        Err(Error::Full { max: 1 })
    );
    server.reload(Config::parse("max_clients = 2").unwrap());
    server.accept("10.0.0.2:5000", 1).unwrap();
    assert_eq!(server.connections(), 2);
}

#[test]
fn default_idle_timeout_reaps_after_five_minutes() {
    let mut server = Server::new(Config::default());
    let a = server.accept("10.0.0.1:5000", 0).unwrap();
    let b = server.accept("10.0.0.2:5000", 0).unwrap();
    server.traffic(b, 100).unwrap();
    assert!(server.tick(299).is_empty());
    assert_eq!(server.tick(300), vec![a]);
    assert_eq!(server.tick(400), vec![b]);
}
