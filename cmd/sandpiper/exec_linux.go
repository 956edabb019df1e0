//go:build linux && cgo

package main

// exec_linux.c hands `sandpiper exec` over to sandpiper-exec before the Go
// runtime starts; cgo compiles it into this program.

import "C"
