package app

import (
	"strings"
	"testing"

	"example.com/logship/internal/config"
	"example.com/logship/internal/ship"
)

func TestReplaySendsEverything(t *testing.T) {
	n, err := Replay(config.Default(), strings.NewReader("a\nb\nc\n"), &ship.MemorySink{})
	if err != nil || n != 3 {
		t.Fatalf("n %d, err %v", n, err)
	}
}
