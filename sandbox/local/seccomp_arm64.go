//go:build linux && cgo && (amd64 || arm64)

package local

import "golang.org/x/sys/unix"

const (
	auditArch     = unix.AUDIT_ARCH_AARCH64
	x32SyscallBit = 0
)

var archDeniedSyscalls = []uintptr{unix.SYS_LOOKUP_DCOOKIE, unix.SYS_NFSSERVCTL}

// arm64 has only inotify_init1.
var archUnsupportedSyscalls []uintptr
