package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func do(h http.Handler, method, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	return rec
}

func TestEvalNotesByPath(t *testing.T) {
	h := NewServer().Routes()
	if rec := do(h, "POST", "/notes", "buy milk"); rec.Code != 201 {
		t.Fatalf("create: %d", rec.Code)
	}
	do(h, "POST", "/notes", "call mum")
	if rec := do(h, "GET", "/notes/2", ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"text":"call mum"`) {
		t.Fatalf("get: %d %s", rec.Code, rec.Body)
	}
	if rec := do(h, "GET", "/notes/abc", ""); rec.Code != 400 {
		t.Fatalf("bad id: %d", rec.Code)
	}
	if rec := do(h, "DELETE", "/notes/1", ""); rec.Code != 204 {
		t.Fatalf("delete: %d", rec.Code)
	}
	if rec := do(h, "GET", "/notes/1", ""); rec.Code != 404 {
		t.Fatalf("get deleted: %d", rec.Code)
	}
	if rec := do(h, "GET", "/note?id=2", ""); rec.Code != 404 {
		t.Fatalf("old query route still answers: %d", rec.Code)
	}
}
