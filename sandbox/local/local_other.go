//go:build !linux || !(amd64 || arm64)

package local

import (
	"context"
	"errors"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Sandbox is the local backend; on this platform it cannot run.
type Sandbox struct{}

// New fails: the local sandbox needs Linux (amd64 or arm64).
func New(ctx context.Context, cfg Config) (*Sandbox, error) {
	return nil, errors.New("sandbox: the local sandbox needs Linux on amd64 or arm64; use another backend (SANDPIPER_SANDBOX)")
}

// Run fails.
func (s *Sandbox) Run(ctx context.Context, req sandbox.Request) (*sandbox.Result, error) {
	return nil, errors.New("sandbox: local: not supported on this platform")
}

// Main returns at once.
func Main() {}
