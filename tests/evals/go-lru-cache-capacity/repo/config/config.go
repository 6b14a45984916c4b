// Package config holds the service settings.
package config

// Config is what thumbs.json holds.
type Config struct {
	// Width of the thumbnails, in pixels.
	Width int
	// CacheEntries is how many thumbnails to keep in memory; 0 means no limit.
	CacheEntries int
}

// Default is used when thumbs.json is absent.
func Default() Config {
	return Config{Width: 160, CacheEntries: 512}
}
