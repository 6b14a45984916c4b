// Package cache holds rendered thumbnails in memory.
package cache

import "sync"

// Cache is a concurrency-safe map from keys to byte slices.
type Cache struct {
	mu      sync.Mutex
	entries map[string][]byte
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{entries: make(map[string][]byte)}
}

// Get returns the value stored under key, if any.
func (c *Cache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[key]
	return v, ok
}

// Put stores value under key.
func (c *Cache) Put(key string, value []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = value
}

// Len is the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
