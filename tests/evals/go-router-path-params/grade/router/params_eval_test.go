package router

import (
	"net/http"
	"testing"
)

func echoParams(names ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for _, n := range names {
			w.Write([]byte(n + "=" + Param(r, n) + ";"))
		}
	}
}

func TestEvalParams(t *testing.T) {
	rt := New()
	rt.Handle("GET", "/users/{user}/posts/{post}", echoParams("user", "post", "nope"))
	rt.Handle("GET", "/notes/{id}", echoParams("id"))
	if rec := serve(rt, "GET", "/users/ann/posts/42"); rec.Code != 200 || rec.Body.String() != "user=ann;post=42;nope=;" {
		t.Fatalf("got %d %q", rec.Code, rec.Body)
	}
	if rec := serve(rt, "GET", "/notes/7"); rec.Body.String() != "id=7;" {
		t.Fatalf("got %q", rec.Body)
	}
}

func TestEvalSegmentCountMustMatch(t *testing.T) {
	rt := New()
	rt.Handle("GET", "/notes/{id}", echoParams("id"))
	for _, path := range []string{"/notes/1/edit", "/notes/", "/notes", "/notes//"} {
		if rec := serve(rt, "GET", path); rec.Code != 404 {
			t.Errorf("%s: got %d, want 404", path, rec.Code)
		}
	}
}

func TestEvalStaticBeatsParam(t *testing.T) {
	rt := New()
	rt.Handle("GET", "/notes/{id}", echoParams("id"))
	rt.Handle("GET", "/notes/new", text("form"))
	rt.Handle("GET", "/{section}/latest", echoParams("section"))
	rt.Handle("GET", "/notes/{id}/latest", echoParams("id"))
	if rec := serve(rt, "GET", "/notes/new"); rec.Body.String() != "form" {
		t.Fatalf("/notes/new: got %q", rec.Body)
	}
	if rec := serve(rt, "GET", "/notes/newer"); rec.Body.String() != "id=newer;" {
		t.Fatalf("/notes/newer: got %q", rec.Body)
	}
	if rec := serve(rt, "GET", "/notes/latest"); rec.Body.String() != "id=latest;" {
		t.Fatalf("/notes/latest: got %q", rec.Body)
	}
}

func TestEvalMethodNotAllowedWithParams(t *testing.T) {
	rt := New()
	rt.Handle("GET", "/notes/{id}", echoParams("id"))
	rt.Handle("DELETE", "/notes/{id}", echoParams("id"))
	rec := serve(rt, "PUT", "/notes/3")
	if rec.Code != 405 || rec.Header().Get("Allow") != "DELETE, GET" {
		t.Fatalf("got %d, Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	if rec := serve(rt, "DELETE", "/notes/3"); rec.Code != 200 || rec.Body.String() != "id=3;" {
		t.Fatalf("got %d %q", rec.Code, rec.Body)
	}
}
