//go:build linux && cgo && (amd64 || arm64)

package local

import "golang.org/x/sys/unix"

// The seccomp filter refuses, with EPERM, what a Python program has no
// business doing: other processes' memory, the kernel keyring, namespaces
// and mounts, loading code into the kernel, io_uring (which other filters
// cannot see into), clocks and reboot. A foreign architecture (32-bit
// entry points) kills the process, so the list cannot be bypassed.
//
// Sockets are an allowlist of families: the network namespace isolates
// AF_INET, AF_INET6 and route netlink, but not, for instance, AF_VSOCK
// (a VM's host ports). Any other family is handed to init (as a seccomp
// user notification), which counts the call and answers EAFNOSUPPORT, what
// a kernel without the family says, so that libraries fall back.

// deniedSyscalls is the list, filtered by what this architecture has.
var deniedSyscalls = append([]uintptr{
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KCMP,
	unix.SYS_PIDFD_GETFD,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG,
	unix.SYS_FSMOUNT, unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME, unix.SYS_ADJTIMEX,
	unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME,
	unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_FANOTIFY_INIT, unix.SYS_QUOTACTL, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
	unix.SYS_MBIND, unix.SYS_MOVE_PAGES, unix.SYS_MIGRATE_PAGES,
	unix.SYS_SET_MEMPOLICY,
}, archDeniedSyscalls...)

// unsupportedSyscalls are refused with ENOSYS, as a kernel without them
// would, so that callers fall back. clone3 passes its flags in memory the
// filter cannot read (the C library falls back to clone, whose flags it
// can); inotify would let a program watch the read-only files every
// sandbox shares with the host and the other runs (which libraries they
// open, when a run starts), and polling is every library's fallback; a
// memfd filled with write() is memory that no process maps, which only a
// memory cgroup would count, and nothing in the data stack needs one. System
// V semaphores and message queues are the same: kernel memory no process
// maps (an array of 32,000 semaphores takes 2 MiB; a queue, its messages),
// which only a memory cgroup would count, so they are refused as a kernel
// built without System V IPC refuses them; Python's multiprocessing uses
// POSIX semaphores (files in /dev/shm) and no module of the data stack
// uses System V ones. System V shared memory stays: its pages are counted,
// by the cgroup or by init's watcher, like any shared memory.
var unsupportedSyscalls = append([]uintptr{
	unix.SYS_CLONE3, unix.SYS_INOTIFY_INIT1, unix.SYS_MEMFD_CREATE,
	unix.SYS_SEMGET, unix.SYS_SEMCTL, unix.SYS_SEMOP, unix.SYS_SEMTIMEDOP,
	unix.SYS_MSGGET, unix.SYS_MSGCTL, unix.SYS_MSGSND, unix.SYS_MSGRCV,
}, archUnsupportedSyscalls...)

// socketFamilies are the socket families a program may create: what Python
// and its libraries use. AF_NETLINK is allowed for NETLINK_ROUTE alone, which
// the C library's getaddrinfo (AI_ADDRCONFIG) and if_nameindex use, and
// which shows only the sandbox's own network namespace.
var socketFamilies = []uint32{unix.AF_UNIX, unix.AF_INET, unix.AF_INET6}

// Classic BPF over struct seccomp_data: nr at 0, arch at 4, args at 16.
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian machines
	offArg1 = 24
	offArg2 = 32

	// retNotify hands the call to init, which answers it (see
	// answer_refusals in init.c).
	retNotify = unix.SECCOMP_RET_USER_NOTIF

	retAllow  = unix.SECCOMP_RET_ALLOW
	retEPERM  = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retENOSY  = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	retEINVAL = unix.SECCOMP_RET_ERRNO | uint32(unix.EINVAL)
	retIgnore = unix.SECCOMP_RET_ERRNO // the call returns 0, not made
	retKill   = unix.SECCOMP_RET_KILL_PROCESS
)

// maxPipeSize is the largest pipe a program may ask for (F_SETPIPE_SZ):
// the kernel's default with 4 KiB pages.
const maxPipeSize = 16 << 12

// namespaceFlags are the clone flags that create namespaces.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

type bpfProg []unix.SockFilter

func (p *bpfProg) stmt(code uint16, k uint32) {
	*p = append(*p, unix.SockFilter{Code: code, K: k})
}

func (p *bpfProg) jump(code uint16, k uint32, jt, jf uint8) {
	*p = append(*p, unix.SockFilter{Code: code, K: k, Jt: jt, Jf: jf})
}

// seccompFilter builds the program; init installs it in the program's
// process, after no_new_privs and the capability drop.
func seccompFilter() []unix.SockFilter {
	var p bpfProg
	ld := func(off uint32) { p.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }
	ret := func(v uint32) { p.stmt(unix.BPF_RET|unix.BPF_K, v) }
	// if nr == k { return v }
	deny := func(nr uint32, v uint32) {
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, nr, 0, 1)
		ret(v)
	}

	ld(offArch)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, auditArch, 1, 0)
	ret(retKill)
	ld(offNr)
	if x32SyscallBit != 0 {
		p.jump(unix.BPF_JMP|unix.BPF_JGE|unix.BPF_K, x32SyscallBit, 0, 1)
		ret(retKill)
	}
	for _, nr := range deniedSyscalls {
		deny(uint32(nr), retEPERM)
	}
	for _, nr := range unsupportedSyscalls {
		deny(uint32(nr), retENOSY)
	}

	// socket and socketpair: the family (argument 0) must be allowed;
	// netlink only for NETLINK_ROUTE (argument 2). Jumps are relative.
	n := uint8(len(socketFamilies))
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_SOCKET, 1, 0)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_SOCKETPAIR, 0, n+6)
	ld(offArg0)
	for i, f := range socketFamilies {
		p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, f, n-uint8(i)+2, 0) // to allow
	}
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.AF_NETLINK, 0, 3) // to notify
	ld(offArg2)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.NETLINK_ROUTE, 0, 1)
	ret(retAllow)
	ret(retNotify)
	// Every other call goes on with the number still loaded.

	// clone: refuse new namespaces. The flags are argument 0 on most
	// architectures.
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_CLONE, 0, 3)
	ld(offArg0)
	p.jump(unix.BPF_JMP|unix.BPF_JSET|unix.BPF_K, namespaceFlags, 0, 1)
	ret(retEPERM)
	ld(offNr) // reload after the argument check (harmless when skipped)

	// fcntl: no directory notifications (dnotify, inotify's older form:
	// it would tell when the host or another run reads a shared file)
	// and no leases (the holder learns of, and may delay by up to
	// lease-break-time, a host process opening one of the files the bot
	// owns for writing); EINVAL, as a kernel without them says. No pipe
	// larger than the kernel's default (init's memory watcher counts each
	// pipe at that); EPERM, as for a user over the pipe limits.
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_FCNTL, 0, 8)
	ld(offArg1)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.F_NOTIFY, 1, 0)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.F_SETLEASE, 0, 1)
	ret(retEINVAL)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.F_SETPIPE_SZ, 0, 3)
	ld(offArg2)
	p.jump(unix.BPF_JMP|unix.BPF_JGT|unix.BPF_K, maxPipeSize, 0, 1)
	ret(retEPERM)
	ld(offNr)

	// setsockopt: a socket's buffers stay at the kernel's default sizes
	// (SO_SNDBUF and SO_RCVBUF are ignored, as a hint a kernel may clamp),
	// so that no socket holds megabytes at once: the watcher counts what
	// sockets hold between its looks, and a larger buffer fills faster
	// than it looks.
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_SETSOCKOPT, 0, 6)
	ld(offArg1)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SOL_SOCKET, 0, 4)
	ld(offArg2)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SO_SNDBUF, 1, 0)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SO_RCVBUF, 0, 1)
	ret(retIgnore)
	ld(offNr)

	// ioctl: no faking terminal input.
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.SYS_IOCTL, 0, 4)
	ld(offArg1)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.TIOCSTI, 1, 0)
	p.jump(unix.BPF_JMP|unix.BPF_JEQ|unix.BPF_K, unix.TIOCLINUX, 0, 1)
	ret(retEPERM)
	ret(retAllow)
	return p
}
