// Package cache holds rendered thumbnails in memory.
package cache

import (
	"container/list"
	"sync"
)

type entry struct {
	key   string
	value []byte
}

// Cache is a concurrency-safe map from keys to byte slices that holds at most capacity
// entries, evicting the least recently used one when full.
type Cache struct {
	mu       sync.Mutex
	capacity int
	order    *list.List // front: most recently used
	entries  map[string]*list.Element
}

// New returns an empty cache holding at most capacity entries; capacity <= 0 means no limit.
func New(capacity int) *Cache {
	return &Cache{capacity: capacity, order: list.New(), entries: make(map[string]*list.Element)}
}

// Get returns the value stored under key, if any.
func (c *Cache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	return el.Value.(*entry).value, true
}

// Put stores value under key, evicting the least recently used entry if the cache is full.
func (c *Cache) Put(key string, value []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		el.Value.(*entry).value = value
		c.order.MoveToFront(el)
		return
	}
	c.entries[key] = c.order.PushFront(&entry{key: key, value: value})
	if c.capacity > 0 && c.order.Len() > c.capacity {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*entry).key)
	}
}

// Len is the number of entries.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Keys lists the keys from most to least recently used.
func (c *Cache) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.entries))
	for el := c.order.Front(); el != nil; el = el.Next() {
		keys = append(keys, el.Value.(*entry).key)
	}
	return keys
}
