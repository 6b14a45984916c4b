package config

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cfg, err := Parse(strings.NewReader("collector = https://c/ingest\nbatch_size = 20 # small\nflush_interval = 2s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Collector != "https://c/ingest" || cfg.BatchSize != 20 || cfg.FlushInterval != 2*time.Second {
		t.Fatalf("got %+v", cfg)
	}
}

func TestParseErrors(t *testing.T) {
	for _, text := range []string{"batch_size = 0", "nonsense", "colour = red"} {
		if _, err := Parse(strings.NewReader(text)); err == nil {
			t.Errorf("%q: want an error", text)
		}
	}
}
