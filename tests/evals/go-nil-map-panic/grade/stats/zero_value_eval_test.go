package stats

import "testing"

func TestEvalZeroValueIsReady(t *testing.T) {
	var c Counter
	if c.Get("a") != 0 || c.Total() != 0 || len(c.Top(3)) != 0 {
		t.Fatal("empty zero value")
	}
	c.Add("a", 2)
	var d Counter
	d.Merge(&c)
	d.Merge(NewCounter())
	d.Add("b", 1)
	if d.Get("a") != 2 || d.Get("b") != 1 || d.Total() != 3 {
		t.Fatalf("got %v", d.Top(5))
	}
}
