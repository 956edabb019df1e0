//go:build linux && cgo

package main

// The C constructor in exec_linux.c starts `sandpiper exec -c CODE`
// before the Go runtime; cgo compiles it into this program.

import "C"
