package service

import (
	"testing"

	"example.com/thumbs/config"
)

func TestEvalCacheSizedFromConfig(t *testing.T) {
	s := New(config.Config{Width: 64, CacheEntries: 3}, fakeRender)
	for _, name := range []string{"a.jpg", "b.jpg", "c.jpg", "d.jpg", "e.jpg"} {
		if _, err := s.Thumbnail(name); err != nil {
			t.Fatal(err)
		}
	}
	if s.Cached() != 3 {
		t.Fatalf("cached %d, want 3", s.Cached())
	}
	s.Thumbnail("e.jpg")
	s.Thumbnail("a.jpg")
	if s.Renders != 6 {
		t.Fatalf("renders %d, want 6 (a.jpg was evicted, e.jpg was not)", s.Renders)
	}
}
