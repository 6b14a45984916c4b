// Package router is a minimal HTTP request router.
package router

import (
	"net/http"
	"sort"
	"strings"
)

type route struct {
	method  string
	pattern string
	handler http.Handler
}

// Router dispatches requests to handlers by method and exact path.
type Router struct {
	routes []route
}

// New returns an empty router.
func New() *Router {
	return &Router{}
}

// Handle registers handler for method and path pattern.
func (rt *Router) Handle(method, pattern string, handler http.HandlerFunc) {
	rt.routes = append(rt.routes, route{method: method, pattern: pattern, handler: handler})
}

// ServeHTTP dispatches the request: 404 if no route has the path, 405 (with an Allow header)
// if routes have the path but not the method.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, rte := range rt.routes {
		if rte.pattern != r.URL.Path {
			continue
		}
		if rte.method == r.Method {
			rte.handler.ServeHTTP(w, r)
			return
		}
		allowed = append(allowed, rte.method)
	}
	if len(allowed) == 0 {
		http.NotFound(w, r)
		return
	}
	sort.Strings(allowed)
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}
