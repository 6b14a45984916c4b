// Package invoice totals customer invoices.
package invoice

import "example.com/billing/money"

// Line is one line of an invoice.
type Line struct {
	Description string
	Unit        money.Amount
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
func (inv Invoice) Subtotal() money.Amount {
	var total money.Amount
	for _, l := range inv.Lines {
		total += l.Unit * money.Amount(l.Qty)
	}
	return total
}

// Tax is the tax on the subtotal.
func (inv Invoice) Tax() money.Amount {
	return inv.Subtotal().Percent(inv.TaxPercent)
}

// Total is what the customer pays.
func (inv Invoice) Total() money.Amount {
	return money.Sum(inv.Subtotal(), inv.Tax())
}
