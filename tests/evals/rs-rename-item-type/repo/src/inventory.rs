use crate::item::Item;

#[derive(Debug, Default)]
pub struct Inventory {
    items: Vec<Item>,
}

impl Inventory {
    /// Adds stock; an existing SKU gets its quantity increased (name and price are updated).
    pub fn add(&mut self, item: Item) {
        match self.items.iter_mut().find(|i| i.sku == item.sku) {
            Some(existing) => {
                existing.qty += item.qty;
                existing.name = item.name;
                existing.price_cents = item.price_cents;
            }
            None => self.items.push(item),
        }
    }

    pub fn find(&self, sku: &str) -> Option<&Item> {
        self.items.iter().find(|i| i.sku == sku)
    }

    /// Takes `qty` off the shelf; fails (changing nothing) if there isn't enough.
    pub fn take(&mut self, sku: &str, qty: u32) -> Result<&Item, String> {
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

    pub fn items(&self) -> &[Item] {
        &self.items
    }

    pub fn low_stock(&self, threshold: u32) -> Vec<&Item> {
        let mut low: Vec<&Item> = self.items.iter().filter(|i| i.qty < threshold).collect();
        low.sort_by(|a, b| a.qty.cmp(&b.qty).then_with(|| a.sku.cmp(&b.sku)));
        low
    }
}
