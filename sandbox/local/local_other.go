//go:build !linux || !cgo || !(amd64 || arm64)

package local

import (
	"context"
	"errors"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Sandbox is the local backend; on this platform it cannot run.
type Sandbox struct{}

// New fails: the local sandbox needs Linux (amd64 or arm64) and a build
// with cgo (its helper processes are C).
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	return nil, errors.New("sandbox: the local sandbox needs Linux on amd64 or arm64 and a build with cgo (CGO_ENABLED=1); use another backend (SANDPIPER_SANDBOX)")
}

// Close does nothing.
func (s *Sandbox) Close() error { return nil }

// Info names the backend; it runs nothing here.
func (s *Sandbox) Info() sandbox.Info {
	return sandbox.Info{Backend: sandbox.BackendLocal, Limits: sandbox.Limits{}.WithDefaults()}
}

// Run fails.
func (s *Sandbox) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	return nil, errors.New("sandbox: local: not supported on this platform")
}
