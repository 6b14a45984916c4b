// Package report prints ledger summaries.
package report

import (
	"fmt"
	"strings"

	"example.com/billing/ledger"
	"example.com/billing/money"
)

// Debtors lists each debtor with their balance, then the total outstanding.
func Debtors(l *ledger.Ledger) string {
	var b strings.Builder
	var outstanding []money.Amount
	for _, name := range l.Debtors() {
		bal := l.Balance(name)
		outstanding = append(outstanding, bal)
		fmt.Fprintf(&b, "%-20s %10s\n", name, bal)
	}
	fmt.Fprintf(&b, "%-20s %10s\n", "TOTAL", money.Sum(outstanding...))
	return b.String()
}
