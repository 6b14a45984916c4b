package router

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func text(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(s)) }
}

func serve(rt *Router, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

func TestExactRoutes(t *testing.T) {
	rt := New()
	rt.Handle("GET", "/health", text("ok"))
	rt.Handle("POST", "/notes", text("created"))
	rt.Handle("GET", "/notes", text("list"))
	if rec := serve(rt, "GET", "/health"); rec.Code != 200 || rec.Body.String() != "ok" {
		t.Fatalf("got %d %q", rec.Code, rec.Body)
	}
	if rec := serve(rt, "POST", "/notes"); rec.Body.String() != "created" {
		t.Fatalf("got %q", rec.Body)
	}
	if rec := serve(rt, "GET", "/nope"); rec.Code != 404 {
		t.Fatalf("got %d", rec.Code)
	}
	rec := serve(rt, "DELETE", "/notes")
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET, POST" {
		t.Fatalf("got %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}
