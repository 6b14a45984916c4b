package ship

import "time"

// DefaultBatchSize is used when Options.BatchSize is zero.
const DefaultBatchSize = 100

// Options tune a Shipper.
type Options struct {
	// BatchSize is the most lines sent per batch; 0 means DefaultBatchSize.
	BatchSize int
	// FlushEvery is how long a partial batch may wait; 0 means never by time.
	FlushEvery time.Duration
}

// Shipper collects lines and sends them in batches.
type Shipper struct {
	sink    Sink
	opts    Options
	pending []string
	oldest  time.Time
	Sent    int
}

// New returns a shipper sending to sink.
func New(sink Sink, opts Options) *Shipper {
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	return &Shipper{sink: sink, opts: opts}
}

// BatchSize is the effective batch size.
func (s *Shipper) BatchSize() int { return s.opts.BatchSize }

// Add queues a line, sending a batch once it is full or the oldest line is too old.
func (s *Shipper) Add(line string, now time.Time) error {
	if len(s.pending) == 0 {
		s.oldest = now
	}
	s.pending = append(s.pending, line)
	if len(s.pending) >= s.opts.BatchSize || (s.opts.FlushEvery > 0 && now.Sub(s.oldest) >= s.opts.FlushEvery) {
		return s.Flush()
	}
	return nil
}

// Flush sends whatever is pending.
func (s *Shipper) Flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	if err := s.sink.Send(s.pending); err != nil {
		return err
	}
	s.Sent += len(s.pending)
	s.pending = s.pending[:0]
	return nil
}
