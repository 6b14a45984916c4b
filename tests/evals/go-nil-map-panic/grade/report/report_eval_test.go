package report

import (
	"strings"
	"testing"
)

var log = []string{
	"2024-05-02T10:15:00Z GET / 200 512",
	"2024-05-02T10:16:03Z GET /pricing 200 2048",
	"2024-05-02T10:16:09Z POST /signup 302 0",
	"garbage",
	"2024-05-02T11:01:00Z GET /pricing 404 12",
	"2024-05-02T23:59:59Z GET / 500 0",
}

func TestEvalSummarize(t *testing.T) {
	s := Summarize(log)
	if s.Requests != 5 || s.Bad != 1 {
		t.Fatalf("requests %d, bad %d", s.Requests, s.Bad)
	}
	for class, want := range map[string]int{"2xx": 2, "3xx": 1, "4xx": 1, "5xx": 1} {
		if got := s.Statuses.Get(class); got != want {
			t.Errorf("%s: got %d, want %d", class, got, want)
		}
	}
	out := Render(s, 1)
	if !strings.Contains(out, "      2  /\n") || !strings.Contains(out, "  5xx: 1") {
		t.Errorf("render:\n%s", out)
	}
}

func TestEvalByHour(t *testing.T) {
	h := ByHour(log)
	if h.Get("10") != 3 || h.Get("11") != 1 || h.Get("23") != 1 || h.Total() != 5 {
		t.Fatalf("by hour: %v", h.Top(24))
	}
}
