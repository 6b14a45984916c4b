package cache_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"example.com/thumbs/cache"
)

func TestEvalEvictsLeastRecentlyPut(t *testing.T) {
	c := cache.New(2)
	c.Put("a", []byte("1"))
	c.Put("b", []byte("2"))
	c.Put("c", []byte("3"))
	if _, ok := c.Get("a"); ok {
		t.Fatal("a should have been evicted")
	}
	if c.Len() != 2 {
		t.Fatalf("len %d", c.Len())
	}
	if got := c.Keys(); !reflect.DeepEqual(got, []string{"c", "b"}) {
		t.Fatalf("keys %v", got)
	}
}

func TestEvalGetCountsAsUse(t *testing.T) {
	c := cache.New(2)
	c.Put("a", []byte("1"))
	c.Put("b", []byte("2"))
	if v, ok := c.Get("a"); !ok || string(v) != "1" {
		t.Fatalf("get a: %q %v", v, ok)
	}
	c.Put("c", []byte("3"))
	if _, ok := c.Get("b"); ok {
		t.Fatal("b was least recently used and should have been evicted")
	}
	if _, ok := c.Get("a"); !ok {
		t.Fatal("a was used recently and should still be there")
	}
	if got := c.Keys(); !reflect.DeepEqual(got, []string{"a", "c"}) {
		t.Fatalf("keys %v", got)
	}
}

func TestEvalPutExistingReplacesAndRefreshes(t *testing.T) {
	c := cache.New(2)
	c.Put("a", []byte("1"))
	c.Put("b", []byte("2"))
	c.Put("a", []byte("1bis"))
	if c.Len() != 2 {
		t.Fatalf("len %d", c.Len())
	}
	c.Put("c", []byte("3"))
	if v, ok := c.Get("a"); !ok || string(v) != "1bis" {
		t.Fatalf("get a: %q %v", v, ok)
	}
	if _, ok := c.Get("b"); ok {
		t.Fatal("b should have been evicted")
	}
}

func TestEvalUnbounded(t *testing.T) {
	for _, capacity := range []int{0, -1} {
		c := cache.New(capacity)
		for i := 0; i < 1000; i++ {
			c.Put(fmt.Sprint(i), nil)
		}
		if c.Len() != 1000 {
			t.Fatalf("capacity %d: len %d", capacity, c.Len())
		}
	}
}

func TestEvalConcurrentUse(t *testing.T) {
	c := cache.New(16)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				key := fmt.Sprint((g*31 + i) % 40)
				c.Put(key, []byte(key))
				c.Get(fmt.Sprint(i % 40))
			}
		}(g)
	}
	wg.Wait()
	if c.Len() != 16 || len(c.Keys()) != 16 {
		t.Fatalf("len %d, keys %d", c.Len(), len(c.Keys()))
	}
}
