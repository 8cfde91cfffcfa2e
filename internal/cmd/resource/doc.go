// Package resource implements coordctl resource: serve the demonstration
// fenced store (resource serve, resource repair) and talk to it (put, get,
// fence, log, floors).
package resource
