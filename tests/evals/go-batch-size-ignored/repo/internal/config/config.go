// Package config reads logship.conf.
package config

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Config holds the settings of logship.conf.
type Config struct {
	Collector     string
	BatchSize     int
	FlushInterval time.Duration
}

// Default is the configuration when logship.conf says nothing.
func Default() Config {
	return Config{Collector: "http://localhost:9880/ingest", BatchSize: 100, FlushInterval: 5 * time.Second}
}

// Parse reads `key = value` lines; `#` starts a comment.
func Parse(r io.Reader) (Config, error) {
	cfg := Default()
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(strings.SplitN(sc.Text(), "#", 2)[0])
		if line == "" {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return cfg, fmt.Errorf("logship.conf:%d: expected key = value", n)
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch key {
		case "collector":
			cfg.Collector = value
		case "batch_size":
			size, err := strconv.Atoi(value)
			if err != nil || size < 1 {
				return cfg, fmt.Errorf("logship.conf:%d: batch_size must be a positive number", n)
			}
			cfg.BatchSize = size
		case "flush_interval":
			d, err := time.ParseDuration(value)
			if err != nil {
				return cfg, fmt.Errorf("logship.conf:%d: %v", n, err)
			}
			cfg.FlushInterval = d
		default:
			return cfg, fmt.Errorf("logship.conf:%d: unknown key %q", n, key)
		}
	}
	return cfg, sc.Err()
}
