// Package money represents amounts of money as integer cents.
package money

import (
	"fmt"
	"strconv"
	"strings"
)

// Amount is an amount of money in cents.
type Amount int64

// Cents builds an amount from a number of cents.
func Cents(c int64) Amount { return Amount(c) }

// Parse reads "12.34", "-0.5" or "7" as an amount.
func Parse(s string) (Amount, error) {
	s = strings.TrimSpace(s)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	whole, frac, _ := strings.Cut(s, ".")
	if len(frac) > 2 {
		return 0, fmt.Errorf("money: %q has more than two decimals", s)
	}
	frac += strings.Repeat("0", 2-len(frac))
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("money: bad amount %q", s)
	}
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("money: bad amount %q", s)
	}
	a := Amount(w*100 + f)
	if neg {
		a = -a
	}
	return a, nil
}

// String formats the amount as "12.34".
func (a Amount) String() string {
	sign := ""
	if a < 0 {
		sign, a = "-", -a
	}
	return fmt.Sprintf("%s%d.%02d", sign, a/100, a%100)
}

// Percent returns p percent of a, rounded half away from zero.
func (a Amount) Percent(p int64) Amount {
	v := int64(a) * p
	if v >= 0 {
		return Amount((v + 50) / 100)
	}
	return Amount((v - 50) / 100)
}

// Sum adds amounts.
func Sum(amounts ...Amount) Amount {
	var total Amount
	for _, a := range amounts {
		total += a
	}
	return total
}
