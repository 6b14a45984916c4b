package money

import "testing"

func TestParseAndString(t *testing.T) {
	for in, want := range map[string]Amount{"12.34": 1234, "-0.5": -50, "7": 700, " 0.05 ": 5} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := Parse("1.234"); err == nil {
		t.Error("want an error for three decimals")
	}
	if s := Amount(-1205).String(); s != "-12.05" {
		t.Errorf("got %s", s)
	}
}

func TestPercent(t *testing.T) {
	if got := Amount(1250).Percent(10); got != 125 {
		t.Errorf("got %v", got)
	}
	if got := Amount(125).Percent(10); got != 13 {
		t.Errorf("got %v", got)
	}
}
