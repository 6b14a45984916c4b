// Package logline parses access log lines: "2024-05-02T10:15:00Z GET /path 200 512".
package logline

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Line is one parsed request.
type Line struct {
	Time   time.Time
	Method string
	Path   string
	Status int
	Bytes  int
}

// Parse parses one log line.
func Parse(s string) (Line, error) {
	f := strings.Fields(s)
	if len(f) != 5 {
		return Line{}, fmt.Errorf("logline: want 5 fields, got %d in %q", len(f), s)
	}
	t, err := time.Parse(time.RFC3339, f[0])
	if err != nil {
		return Line{}, fmt.Errorf("logline: %w", err)
	}
	status, err := strconv.Atoi(f[3])
	if err != nil {
		return Line{}, fmt.Errorf("logline: bad status %q", f[3])
	}
	n, err := strconv.Atoi(f[4])
	if err != nil {
		return Line{}, fmt.Errorf("logline: bad size %q", f[4])
	}
	return Line{Time: t, Method: f[1], Path: f[2], Status: status, Bytes: n}, nil
}
