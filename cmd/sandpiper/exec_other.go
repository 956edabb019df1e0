//go:build !linux || !cgo

package main

// constructorStdin: without the constructor, exec reads standard input
// itself.
func constructorStdin() (string, bool, error) { return "", false, nil }
