//go:build linux && (amd64 || arm64)

package local

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock confines the program beyond the mount namespace: it may read and
// execute anything in its (read-only) root, write only under the writable
// directories, make no TCP connections or binds, reach no abstract UNIX
// socket outside the sandbox, and signal no process outside it (init
// included). It is applied as far as the kernel's Landlock ABI allows.

// rulesetAttr is struct landlock_ruleset_attr up to ABI 6.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

const (
	fsRead = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	// fsWrite is everything but device nodes.
	fsWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
		unix.LANDLOCK_ACCESS_FS_REFER | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	fsAll = fsRead | fsWrite | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// fsAccessByABI is what each Landlock ABI version can handle.
func fsAccessByABI(abi int) uint64 {
	a := uint64(fsAll)
	if abi < 5 {
		a &^= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi < 3 {
		a &^= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi < 2 {
		a &^= unix.LANDLOCK_ACCESS_FS_REFER
	}
	return a
}

// landlockABI returns the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// writableDirs and writableFiles are where the program may write.
var (
	writableDirs  = []string{"/mnt/data", "/tmp", "/dev/shm"}
	writableFiles = []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"}
)

// restrictLandlock confines the calling thread (and what it forks).
func restrictLandlock() error {
	abi := landlockABI()
	if abi == 0 {
		return nil // not in this kernel: the mount namespace still holds
	}
	handled := fsAccessByABI(abi)
	attr := rulesetAttr{handledFS: handled}
	size := unsafe.Sizeof(attr.handledFS)
	if abi >= 4 {
		attr.handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size += unsafe.Sizeof(attr.handledNet)
	}
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size += unsafe.Sizeof(attr.scoped)
	}
	rfd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock: create ruleset: %w", errno)
	}
	defer unix.Close(int(rfd))

	add := func(path string, access uint64) error {
		fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("landlock: open %s: %w", path, err)
		}
		defer unix.Close(fd)
		rule := unix.LandlockPathBeneathAttr{Allowed_access: access & handled, Parent_fd: int32(fd)}
		if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, rfd, unix.LANDLOCK_RULE_PATH_BENEATH,
			uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
			return fmt.Errorf("landlock: rule for %s: %w", path, errno)
		}
		return nil
	}
	if err := add("/", fsRead); err != nil {
		return err
	}
	for _, d := range writableDirs {
		if err := add(d, fsRead|fsWrite); err != nil {
			return err
		}
	}
	for _, f := range writableFiles {
		if err := add(f, unix.LANDLOCK_ACCESS_FS_READ_FILE|unix.LANDLOCK_ACCESS_FS_WRITE_FILE); err != nil {
			return err
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, rfd, 0, 0); errno != 0 {
		return fmt.Errorf("landlock: restrict: %w", errno)
	}
	return nil
}
