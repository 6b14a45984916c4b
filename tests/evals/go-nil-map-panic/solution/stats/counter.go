// Package stats counts things.
package stats

import "sort"

// Counter counts occurrences of string keys. The zero value is an empty counter ready to use.
type Counter struct {
	counts map[string]int
	total  int
}

// NewCounter returns an empty counter.
func NewCounter() *Counter {
	return &Counter{counts: make(map[string]int)}
}

// Add counts key n more times.
func (c *Counter) Add(key string, n int) {
	if c.counts == nil {
		c.counts = make(map[string]int)
	}
	c.counts[key] += n
	c.total += n
}

// Get is how many times key was counted.
func (c *Counter) Get(key string) int {
	return c.counts[key]
}

// Total is the sum of all counts.
func (c *Counter) Total() int {
	return c.total
}

// Merge adds every count of other into c.
func (c *Counter) Merge(other *Counter) {
	for k, n := range other.counts {
		c.Add(k, n)
	}
}

// Entry is one key and its count.
type Entry struct {
	Key   string
	Count int
}

// Top returns the n most counted keys, ties broken by key.
func (c *Counter) Top(n int) []Entry {
	entries := make([]Entry, 0, len(c.counts))
	for k, v := range c.counts {
		entries = append(entries, Entry{k, v})
	}
	sort.Slice(entries, func(i, j int) bool {
		if entries[i].Count != entries[j].Count {
			return entries[i].Count > entries[j].Count
		}
		return entries[i].Key < entries[j].Key
	})
	if n < len(entries) {
		entries = entries[:n]
	}
	return entries
}
