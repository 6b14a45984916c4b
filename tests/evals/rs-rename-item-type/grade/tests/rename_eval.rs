use std::path::Path;

use stockroom::item::StockItem;

/// Identifier tokens of Rust source, with `//` comments left out.
fn identifiers(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in source.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.extend(
            code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .filter(|t| !t.is_empty())
                .map(str::to_string),
        );
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn new_name_works() {
    let item = StockItem::new("A-1", "Thing", 3, 250);
    assert_eq!(item.value_cents(), 750);
    let same: stockroom::StockItem = item.clone();
    assert_eq!(same, item);
}

#[test]
fn old_name_is_gone_from_the_code() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() >= 5);
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        assert!(
            !identifiers(&source).iter().any(|t| t == "Item"),
            "`Item` is still used in {}",
            file.display()
        );
    }
}
