package local

// Main does nothing. The sandbox's helper processes (its zygote and each
// sandbox's init) start from a C constructor before the Go runtime, when
// the binary is executed as one (see sandbox.c), so no call is needed from
// main; Main remains so that programs calling it need not change.
func Main() {}
