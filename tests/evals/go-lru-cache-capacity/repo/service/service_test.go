package service

import (
	"errors"
	"testing"

	"example.com/thumbs/config"
)

func fakeRender(name string, width int) ([]byte, error) {
	if name == "missing.jpg" {
		return nil, errors.New("no such image")
	}
	return []byte(name), nil
}

func TestRendersOnce(t *testing.T) {
	s := New(config.Default(), fakeRender)
	for i := 0; i < 3; i++ {
		data, err := s.Thumbnail("cat.jpg")
		if err != nil || string(data) != "cat.jpg" {
			t.Fatalf("got %q, %v", data, err)
		}
	}
	if s.Renders != 1 || s.Cached() != 1 {
		t.Fatalf("renders %d, cached %d", s.Renders, s.Cached())
	}
}

func TestErrorsAreNotCached(t *testing.T) {
	s := New(config.Default(), fakeRender)
	if _, err := s.Thumbnail("missing.jpg"); err == nil {
		t.Fatal("expected an error")
	}
	if s.Cached() != 0 {
		t.Fatal("error was cached")
	}
}
