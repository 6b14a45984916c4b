// Package report summarizes access logs.
package report

import (
	"fmt"
	"strings"

	"example.com/tally/logline"
	"example.com/tally/stats"
)

// Summary is what a log file boils down to.
type Summary struct {
	Requests int
	Paths    *stats.Counter
	Statuses stats.Counter
	Bad      int
}

// Summarize tallies requests by path and by status class ("2xx", "4xx", ...).
func Summarize(lines []string) Summary {
	s := Summary{Paths: stats.NewCounter(), Statuses: *stats.NewCounter()}
	for _, raw := range lines {
		l, err := logline.Parse(raw)
		if err != nil {
			s.Bad++
			continue
		}
		s.Requests++
		s.Paths.Add(l.Path, 1)
		s.Statuses.Add(fmt.Sprintf("%dxx", l.Status/100), 1)
	}
	return s
}

// ByHour counts requests per hour of day ("00".."23"), in UTC.
func ByHour(lines []string) *stats.Counter {
	var hours stats.Counter
	for _, raw := range lines {
		if l, err := logline.Parse(raw); err == nil {
			hours.Add(l.Time.UTC().Format("15"), 1)
		}
	}
	return &hours
}

// Render prints a summary.
func Render(s Summary, top int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d requests (%d unparseable lines)\n", s.Requests, s.Bad)
	for _, e := range s.Paths.Top(top) {
		fmt.Fprintf(&b, "  %6d  %s\n", e.Count, e.Key)
	}
	for _, class := range []string{"2xx", "3xx", "4xx", "5xx"} {
		if n := s.Statuses.Get(class); n > 0 {
			fmt.Fprintf(&b, "  %s: %d\n", class, n)
		}
	}
	return b.String()
}
