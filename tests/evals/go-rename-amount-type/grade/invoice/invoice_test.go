package invoice

import (
	"testing"

	"example.com/billing/money"
)

func TestTotals(t *testing.T) {
	inv := Invoice{
		Number:     "2024-001",
		Lines:      []Line{{"Hosting", money.Cents(2000), 3}, {"Domain", money.Amount(1250), 1}},
		TaxPercent: 20,
	}
	if inv.Subtotal() != 7250 || inv.Tax() != 1450 || inv.Total() != 8700 {
		t.Fatalf("got %v %v %v", inv.Subtotal(), inv.Tax(), inv.Total())
	}
}
