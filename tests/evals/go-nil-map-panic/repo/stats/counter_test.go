package stats

import (
	"reflect"
	"testing"
)

func TestCounter(t *testing.T) {
	c := NewCounter()
	c.Add("/", 3)
	c.Add("/about", 1)
	c.Add("/blog", 3)
	if c.Get("/") != 3 || c.Get("/nope") != 0 || c.Total() != 7 {
		t.Fatalf("got %d %d %d", c.Get("/"), c.Get("/nope"), c.Total())
	}
	want := []Entry{{"/", 3}, {"/blog", 3}}
	if got := c.Top(2); !reflect.DeepEqual(got, want) {
		t.Fatalf("top: got %v, want %v", got, want)
	}
}

func TestMerge(t *testing.T) {
	a, b := NewCounter(), NewCounter()
	a.Add("x", 1)
	b.Add("x", 2)
	b.Add("y", 5)
	a.Merge(b)
	if a.Get("x") != 3 || a.Get("y") != 5 || a.Total() != 8 {
		t.Fatalf("merge: %v", a.Top(10))
	}
}
