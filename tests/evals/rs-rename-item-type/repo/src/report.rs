use crate::item::Item;

fn money(cents: u64) -> String {
    format!("${}.{:02}", cents / 100, cents % 100)
}

/// A fixed-width stock report, one line per item, then the total value.
pub fn stock_report(items: &[Item]) -> String {
    let mut out = String::new();
    for item in items {
        out.push_str(&format!(
            "{:<10}{:<24}{:>5}{:>12}\n",
            item.sku,
            item.name,
            item.qty,
            money(item.value_cents())
        ));
    }
    let total: u64 = items.iter().map(Item::value_cents).sum();
    out.push_str(&format!("{:>51}\n", format!("total {}", money(total))));
    out
}
