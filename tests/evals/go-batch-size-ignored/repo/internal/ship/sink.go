// Package ship batches lines and sends them to a sink.
package ship

// Sink receives batches of lines (in production, an HTTP client posting to the collector).
type Sink interface {
	Send(batch []string) error
}

// MemorySink records batches; used in tests and dry runs.
type MemorySink struct {
	Batches [][]string
}

// Send records a copy of the batch.
func (m *MemorySink) Send(batch []string) error {
	m.Batches = append(m.Batches, append([]string(nil), batch...))
	return nil
}
