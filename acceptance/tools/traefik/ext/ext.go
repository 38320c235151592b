// Package ext stands in for traefik's nested module github.com/traefik/traefik/dynamic/ext, which
// the v3.7.13 module zip leaves out: this is its whole upstream content (two empty types).
package ext

// HTTP is the extension point of the dynamic HTTP configuration (empty upstream).
type HTTP struct{}

// Router is the extension point of an HTTP router (empty upstream).
type Router struct{}
