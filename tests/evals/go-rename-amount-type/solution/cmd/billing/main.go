// Command billing prints the outstanding balances for a set of invoices and payments.
package main

import (
	"fmt"
	"os"

	"example.com/billing/invoice"
	"example.com/billing/ledger"
	"example.com/billing/money"
	"example.com/billing/report"
)

func mustParse(s string) money.Amount {
	a, err := money.Parse(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return a
}

func main() {
	l := ledger.New()
	l.Bill(invoice.Invoice{Customer: "Acme", Lines: []invoice.Line{{Description: "Support", Unit: mustParse("150.00"), Qty: 4}}, TaxPercent: 20})
	l.Bill(invoice.Invoice{Customer: "Globex", Lines: []invoice.Line{{Description: "Audit", Unit: mustParse("900"), Qty: 1}}})
	l.Pay("Globex", mustParse("900"))
	fmt.Print(report.Debtors(l))
}
