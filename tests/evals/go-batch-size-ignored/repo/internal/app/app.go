// Package app wires the configuration and the shipper together.
package app

import (
	"bufio"
	"io"
	"strings"
	"time"

	"example.com/logship/internal/config"
	"example.com/logship/internal/ship"
)

// Pipeline skips blank lines and ships the rest.
type Pipeline struct {
	Shipper *ship.Shipper
}

// Push sends one line through the pipeline.
func (p *Pipeline) Push(line string, now time.Time) error {
	if strings.TrimSpace(line) == "" {
		return nil
	}
	return p.Shipper.Add(line, now)
}

// NewLivePipeline builds the pipeline for lines arriving as they are logged.
func NewLivePipeline(cfg config.Config, sink ship.Sink) *Pipeline {
	return &Pipeline{Shipper: ship.New(sink, ship.Options{FlushEvery: cfg.FlushInterval})}
}

// Replay re-sends an archived log as fast as the sink accepts it. Nothing waits for more
// lines, so batches are only ever flushed when full (and once at the end).
func Replay(cfg config.Config, archive io.Reader, sink ship.Sink) (int, error) {
	p := &Pipeline{Shipper: ship.New(sink, ship.Options{})}
	sc := bufio.NewScanner(archive)
	for sc.Scan() {
		if err := p.Push(sc.Text(), time.Time{}); err != nil {
			return p.Shipper.Sent, err
		}
	}
	if err := sc.Err(); err != nil {
		return p.Shipper.Sent, err
	}
	err := p.Shipper.Flush()
	return p.Shipper.Sent, err
}
