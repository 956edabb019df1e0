//go:build linux && cgo

package main

// The C constructor in exec_linux.c starts `sandpiper exec` before the Go
// runtime; cgo compiles it into this program.

// #include <stddef.h>
// int sandpiper_exec_stdin(const char **code, size_t *len, int *err);
import "C"

import "syscall"

// constructorStdin returns the code exec's constructor read from standard
// input, if it did (then standard input is at its end).
func constructorStdin() (code string, ok bool, err error) {
	var p *C.char
	var n C.size_t
	var e C.int
	if C.sandpiper_exec_stdin(&p, &n, &e) == 0 {
		return "", false, nil
	}
	if e != 0 {
		return "", true, syscall.Errno(e)
	}
	return C.GoStringN(p, C.int(n)), true, nil
}
