package ship

import (
	"fmt"
	"testing"
	"time"
)

func TestBatches(t *testing.T) {
	sink := &MemorySink{}
	s := New(sink, Options{BatchSize: 3})
	now := time.Unix(0, 0)
	for i := 0; i < 7; i++ {
		s.Add(fmt.Sprint(i), now)
	}
	s.Flush()
	if len(sink.Batches) != 3 || len(sink.Batches[0]) != 3 || len(sink.Batches[2]) != 1 || s.Sent != 7 {
		t.Fatalf("batches %v", sink.Batches)
	}
}
