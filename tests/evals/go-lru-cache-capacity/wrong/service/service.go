// Package service renders thumbnails on demand and caches them.
package service

import (
	"fmt"

	"example.com/thumbs/cache"
	"example.com/thumbs/config"
)

// Renderer produces the thumbnail of the named image at the given width.
type Renderer func(name string, width int) ([]byte, error)

// Service serves thumbnails, rendering each at most once while it stays cached.
type Service struct {
	cfg     config.Config
	render  Renderer
	cache   *cache.Cache
	Renders int
}

// New builds a service with the given settings.
func New(cfg config.Config, render Renderer) *Service {
	return &Service{cfg: cfg, render: render, cache: cache.New(cfg.CacheEntries)}
}

// Thumbnail returns the thumbnail of the named image.
func (s *Service) Thumbnail(name string) ([]byte, error) {
	key := fmt.Sprintf("%s@%d", name, s.cfg.Width)
	if data, ok := s.cache.Get(key); ok {
		return data, nil
	}
	data, err := s.render(name, s.cfg.Width)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", name, err)
	}
	s.Renders++
	s.cache.Put(key, data)
	return data, nil
}

// Cached is how many thumbnails are in memory.
func (s *Service) Cached() int {
	return s.cache.Len()
}
