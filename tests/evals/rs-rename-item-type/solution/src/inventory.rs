use crate::item::StockItem;

#[derive(Debug, Default)]
pub struct Inventory {
    items: Vec<StockItem>,
}

impl Inventory {
    /// Adds stock; an existing SKU gets its quantity increased (name and price are updated).
    pub fn add(&mut self, item: StockItem) {
        match self.items.iter_mut().find(|i| i.sku == item.sku) {
            Some(existing) => {
                existing.qty += item.qty;
                existing.name = item.name;
                existing.price_cents = item.price_cents;
            }
            None => self.items.push(item),
        }
    }

    pub fn find(&self, sku: &str) -> Option<&StockItem> {
        self.items.iter().find(|i| i.sku == sku)
    }

    /// Takes `qty` off the shelf; fails (changing nothing) if there isn't enough.
    pub fn take(&mut self, sku: &str, qty: u32) -> Result<&StockItem, String> {
        let item = self
            .items
            .iter_mut()
            .find(|i| i.sku == sku)
            .ok_or_else(|| format!("unknown SKU {sku}"))?;
        if item.qty < qty {
            return Err(format!("only {} of {sku} left", item.qty));
        }
        item.qty -= qty;
        Ok(item)
    }

    pub fn items(&self) -> &[StockItem] {
        &self.items
    }

    pub fn low_stock(&self, threshold: u32) -> Vec<&StockItem> {
        let mut low: Vec<&StockItem> = self.items.iter().filter(|i| i.qty < threshold).collect();
        low.sort_by(|a, b| a.qty.cmp(&b.qty).then_with(|| a.sku.cmp(&b.sku)));
        low
    }
}
