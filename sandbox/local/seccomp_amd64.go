//go:build linux && cgo && (amd64 || arm64)

package local

import "golang.org/x/sys/unix"

const (
	auditArch     = unix.AUDIT_ARCH_X86_64
	x32SyscallBit = 0x40000000 // __X32_SYSCALL_BIT
)

var archDeniedSyscalls = []uintptr{
	unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_USELIB, unix.SYS_USTAT, unix.SYS_SYSFS,
	unix.SYS_LOOKUP_DCOOKIE, unix.SYS_NFSSERVCTL, unix.SYS_CREATE_MODULE,
}

var archUnsupportedSyscalls = []uintptr{unix.SYS_INOTIFY_INIT}
