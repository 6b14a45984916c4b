// Package ledger keeps customer balances.
package ledger

import (
	"sort"

	"example.com/billing/invoice"
	"example.com/billing/money"
)

// Ledger maps customers to what they owe (positive) or are owed (negative).
type Ledger struct {
	balances map[string]money.Amount
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{balances: make(map[string]money.Amount)}
}

// Bill records an invoice against its customer.
func (l *Ledger) Bill(inv invoice.Invoice) {
	l.balances[inv.Customer] += inv.Total()
}

// Pay records a payment from a customer.
func (l *Ledger) Pay(customer string, amount money.Amount) {
	l.balances[customer] -= amount
}

// Balance is what the customer owes.
func (l *Ledger) Balance(customer string) money.Amount {
	return l.balances[customer]
}

// Debtors lists the customers who owe money, sorted by name.
func (l *Ledger) Debtors() []string {
	var names []string
	for name, bal := range l.balances {
		if bal > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}
