use crate::item::StockItem;

/// Parses `sku,name,qty,price_cents` lines (a header line starting with `sku` is skipped).
pub fn parse_items(text: &str) -> Result<Vec<StockItem>, String> {
    let mut items = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("sku,") {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [sku, name, qty, price] = fields[..] else {
            return Err(format!("line {}: expected 4 fields", n + 1));
        };
        let qty = qty
            .parse()
            .map_err(|_| format!("line {}: bad qty", n + 1))?;
        let price = price
            .parse()
            .map_err(|_| format!("line {}: bad price", n + 1))?;
        items.push(StockItem::new(sku, name, qty, price));
    }
    Ok(items)
}
