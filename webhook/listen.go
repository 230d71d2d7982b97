package webhook

import (
	"net/http"
	"time"
)

// Limits of every listener hookinbox runs (the public intake and the
// internal one).
const (
	// MaxHeaderBytes bounds a request's line and header block; a larger
	// one is answered 431 before any handler runs (Go's server allows
	// 4 KiB of slack above it).
	MaxHeaderBytes = 64 << 10
	// DefaultRequestTimeout is a delivery's deadline when Options does not
	// set one: past it, 503.
	DefaultRequestTimeout = 5 * time.Second
	// ReadHeaderTimeout bounds the wait for a request's headers: a sender
	// that never finishes them is disconnected.
	ReadHeaderTimeout = 5 * time.Second
)

// NewHTTPServer is the http.Server of every hookinbox listener, serving h:
// bounded header size and read, write and idle times.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
	}
}
