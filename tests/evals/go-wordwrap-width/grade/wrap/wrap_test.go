package wrap

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWrapFitsExactly(t *testing.T) {
	got := Wrap("the quick brown fox", 9)
	want := "the quick\nbrown fox"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWrapNeverExceedsWidth(t *testing.T) {
	text := "aaaa bbbbb cc dddd e ffffff gg hhh"
	for width := 6; width <= 20; width++ {
		for _, line := range strings.Split(Wrap(text, width), "\n") {
			if utf8.RuneCountInString(line) > width {
				t.Errorf("width %d: line %q is too long", width, line)
			}
		}
	}
	if got, want := Wrap("aaaa bbbbb", 9), "aaaa\nbbbbb"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWrapCountsCharactersNotBytes(t *testing.T) {
	got := Wrap("café crème brûlée", 10)
	want := "café crème\nbrûlée"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWrapLongWordAlone(t *testing.T) {
	got := Wrap("see https://example.com/a/very/long/path now", 12)
	want := "see\nhttps://example.com/a/very/long/path\nnow"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWrapCollapsesWhitespace(t *testing.T) {
	if got := Wrap("  one\n\ntwo   three ", 80); got != "one two three" {
		t.Fatalf("got %q", got)
	}
	if got := Wrap("", 10); got != "" {
		t.Fatalf("got %q", got)
	}
}

func TestIndent(t *testing.T) {
	if got := Indent("a\nb", "> "); got != "> a\n> b" {
		t.Fatalf("got %q", got)
	}
}
