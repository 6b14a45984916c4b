/// One line of stock: a product and how many of it are on the shelf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StockItem {
    pub sku: String,
    pub name: String,
    pub qty: u32,
    pub price_cents: u64,
}

impl StockItem {
    pub fn new(sku: &str, name: &str, qty: u32, price_cents: u64) -> StockItem {
        StockItem {
            sku: sku.to_string(),
            name: name.to_string(),
            qty,
            price_cents,
        }
    }

    /// The value of the stock on hand, in cents.
    pub fn value_cents(&self) -> u64 {
        self.price_cents * u64::from(self.qty)
    }
}
