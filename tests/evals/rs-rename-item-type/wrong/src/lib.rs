//! Inventory bookkeeping for a small shop.
//!
//! ```
//! use stockroom::{Inventory, Item};
//!
//! let mut inv = Inventory::default();
//! inv.add(Item::new("MUG-01", "Enamel mug", 12, 1450));
//! assert_eq!(inv.find("MUG-01").map(|i| i.qty), Some(12));
//! ```

pub mod csv;
pub mod inventory;
pub mod item;
pub mod report;

pub use inventory::Inventory;
pub use item::StockItem;
