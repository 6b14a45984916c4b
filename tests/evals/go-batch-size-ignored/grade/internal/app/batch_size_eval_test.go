package app

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"example.com/logship/internal/config"
	"example.com/logship/internal/ship"
)

func conf(t *testing.T, text string) config.Config {
	t.Helper()
	cfg, err := config.Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func sizes(batches [][]string) []int {
	out := make([]int, len(batches))
	for i, b := range batches {
		out[i] = len(b)
	}
	return out
}

func TestEvalLiveUsesBatchSize(t *testing.T) {
	sink := &ship.MemorySink{}
	p := NewLivePipeline(conf(t, "batch_size = 20\nflush_interval = 1h\n"), sink)
	now := time.Unix(0, 0)
	for i := 0; i < 45; i++ {
		p.Push(fmt.Sprint("line ", i), now)
	}
	if got := fmt.Sprint(sizes(sink.Batches)); got != "[20 20]" {
		t.Fatalf("batch sizes %s, want [20 20]", got)
	}
	if p.Shipper.BatchSize() != 20 {
		t.Fatalf("batch size %d", p.Shipper.BatchSize())
	}
}

func TestEvalLiveKeepsFlushInterval(t *testing.T) {
	sink := &ship.MemorySink{}
	p := NewLivePipeline(conf(t, "batch_size = 20\nflush_interval = 2s\n"), sink)
	start := time.Unix(0, 0)
	p.Push("a", start)
	p.Push("b", start.Add(2*time.Second))
	if got := fmt.Sprint(sizes(sink.Batches)); got != "[2]" {
		t.Fatalf("batch sizes %s, want [2]", got)
	}
}

func TestEvalReplayUsesBatchSize(t *testing.T) {
	sink := &ship.MemorySink{}
	archive := strings.Repeat("GET /\n", 45)
	n, err := Replay(conf(t, "batch_size = 20\n"), strings.NewReader(archive), sink)
	if err != nil || n != 45 {
		t.Fatalf("n %d, err %v", n, err)
	}
	if got := fmt.Sprint(sizes(sink.Batches)); got != "[20 20 5]" {
		t.Fatalf("batch sizes %s, want [20 20 5]", got)
	}
}

func TestEvalDefaultStillHundred(t *testing.T) {
	sink := &ship.MemorySink{}
	Replay(config.Default(), strings.NewReader(strings.Repeat("x\n", 250)), sink)
	if got := fmt.Sprint(sizes(sink.Batches)); got != "[100 100 50]" {
		t.Fatalf("batch sizes %s", got)
	}
}
