// Package router is a minimal HTTP request router with {name} path parameters.
package router

import (
	"context"
	"net/http"
	"sort"
	"strings"
)

type route struct {
	method   string
	segments []string
	handler  http.Handler
}

// Router dispatches requests to handlers by method and path pattern.
type Router struct {
	routes []route
}

type paramsKey struct{}

// New returns an empty router.
func New() *Router {
	return &Router{}
}

// Handle registers handler for method and path pattern. A pattern segment written {name}
// matches any one non-empty path segment; read it with Param.
func (rt *Router) Handle(method, pattern string, handler http.HandlerFunc) {
	rt.routes = append(rt.routes, route{method: method, segments: strings.Split(pattern, "/"), handler: handler})
}

// Param returns the value of the named path parameter of the request ("" if none).
func Param(r *http.Request, name string) string {
	params, _ := r.Context().Value(paramsKey{}).(map[string]string)
	return params[name]
}

func isParam(segment string) bool {
	return len(segment) > 2 && strings.HasPrefix(segment, "{") && strings.HasSuffix(segment, "}")
}

// match returns the parameters if the route's pattern matches the path segments.
func (rte route) match(path []string) (map[string]string, bool) {
	if len(path) != len(rte.segments) {
		return nil, false
	}
	params := map[string]string{}
	for i, seg := range rte.segments {
		switch {
		case isParam(seg):
			if path[i] == "" {
				return nil, false
			}
			params[seg[1:len(seg)-1]] = path[i]
		case seg != path[i]:
			return nil, false
		}
	}
	return params, true
}

// moreSpecific reports whether a beats b: the first segment where one is literal and the
// other a parameter decides.
func moreSpecific(a, b route) bool {
	for i := range a.segments {
		pa, pb := isParam(a.segments[i]), isParam(b.segments[i])
		if pa != pb {
			return !pa
		}
	}
	return false
}

// ServeHTTP dispatches the request: 404 if no route matches the path, 405 (with an Allow
// header) if routes match the path but not the method.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.Split(r.URL.Path, "/")
	var best *route
	var bestParams map[string]string
	allowed := map[string]bool{}
	for i := range rt.routes {
		rte := rt.routes[i]
		params, ok := rte.match(path)
		if !ok {
			continue
		}
		if rte.method != r.Method {
			allowed[rte.method] = true
			continue
		}
		if best == nil || moreSpecific(rte, *best) {
			best, bestParams = &rt.routes[i], params
		}
	}
	if best != nil {
		ctx := context.WithValue(r.Context(), paramsKey{}, bestParams)
		best.handler.ServeHTTP(w, r.WithContext(ctx))
		return
	}
	if len(allowed) == 0 {
		http.NotFound(w, r)
		return
	}
	methods := make([]string, 0, len(allowed))
	for m := range allowed {
		methods = append(methods, m)
	}
	sort.Strings(methods)
	w.Header().Set("Allow", strings.Join(methods, ", "))
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}
