use stockroom::csv::parse_items;
use stockroom::report::stock_report;
use stockroom::{Inventory, StockItem};

const CSV: &str = "sku,name,qty,price_cents\nMUG-01,Enamel mug,12,1450\nTEA-02,Green tea,3,899\nPOT-03,Teapot,1,3900\n";

#[test]
fn add_and_take() {
    let mut inv = Inventory::default();
    for item in parse_items(CSV).unwrap() {
        inv.add(item);
    }
    inv.add(StockItem::new("TEA-02", "Green tea", 2, 950));
    assert_eq!(inv.find("TEA-02").unwrap().qty, 5);
    assert_eq!(inv.take("MUG-01", 2).unwrap().qty, 10);
    assert!(inv.take("POT-03", 2).is_err());
    let low: Vec<&str> = inv.low_stock(6).iter().map(|i| i.sku.as_str()).collect();
    assert_eq!(low, ["POT-03", "TEA-02"]);
}

#[test]
fn report() {
    let items = parse_items(CSV).unwrap();
    let text = stock_report(&items);
    assert!(text.contains("Enamel mug"));
    assert!(text.trim_end().ends_with("total $239.97"), "{text}");
}
