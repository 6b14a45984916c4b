// Package invoice totals customer invoices.
package invoice

import "example.com/billing/money"

// Line is one line of an invoice.
type Line struct {
	Description string
	Unit        money.Amt
	Qty         int64
}

// Invoice is a customer invoice.
type Invoice struct {
	Number     string
	Customer   string
	Lines      []Line
	TaxPercent int64
}

// Subtotal is the sum of the lines.
func (inv Invoice) Subtotal() money.Amt {
	var total money.Amt
	for _, l := range inv.Lines {
		total += l.Unit * money.Amt(l.Qty)
	}
	return total
}

// Tax is the tax on the subtotal.
func (inv Invoice) Tax() money.Amt {
	return inv.Subtotal().Percent(inv.TaxPercent)
}

// Total is what the customer pays.
func (inv Invoice) Total() money.Amt {
	return money.Sum(inv.Subtotal(), inv.Tax())
}
