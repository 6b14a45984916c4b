// Package api serves notes over HTTP.
package api

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"

	"example.com/notes/router"
)

// Note is one note.
type Note struct {
	ID   int    `json:"id"`
	Text string `json:"text"`
}

// Server holds the notes in memory.
type Server struct {
	mu     sync.Mutex
	notes  map[int]Note
	nextID int
}

// NewServer returns a server with no notes.
func NewServer() *Server {
	return &Server{notes: make(map[int]Note), nextID: 1}
}

// Routes returns the HTTP handler for the API.
func (s *Server) Routes() http.Handler {
	rt := router.New()
	rt.Handle("POST", "/notes", s.create)
	rt.Handle("GET", "/notes/{id}", s.get)
	rt.Handle("DELETE", "/notes/{id}", s.remove)
	return rt
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil || len(body) == 0 {
		http.Error(w, "empty note", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	n := Note{ID: s.nextID, Text: string(body)}
	s.notes[n.ID] = n
	s.nextID++
	s.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(n)
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (int, bool) {
	id, err := strconv.Atoi(router.Param(r, "id"))
	if err != nil {
		http.Error(w, "bad id", http.StatusBadRequest)
		return 0, false
	}
	return id, true
}

func (s *Server) get(w http.ResponseWriter, r *http.Request) {
	id, ok := s.lookup(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	n, found := s.notes[id]
	s.mu.Unlock()
	if !found {
		http.NotFound(w, r)
		return
	}
	json.NewEncoder(w).Encode(n)
}

func (s *Server) remove(w http.ResponseWriter, r *http.Request) {
	id, ok := s.lookup(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	_, found := s.notes[id]
	delete(s.notes, id)
	s.mu.Unlock()
	if !found {
		http.NotFound(w, r)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
