//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The zygote is a small helper process, started once per Sandbox, that
// forks each sandbox's init (sandbox.c). Both are C, run from a
// constructor before the Go runtime starts: a Go process costs
// milliseconds of CPU to start and stop (the bot binary's package
// initialisation alone about 8 ms), and the zygote's address space stays
// tiny, so forking it is cheap where forking the bot is not (creating a
// user namespace rules out vfork).
//
// Protocol, over a SOCK_SEQPACKET socket pair: the host sends the host id
// the sandbox user maps to (4 bytes) with the init's descriptors (request,
// stdout, stderr, result pipe, mount trees, cgroup files) as SCM_RIGHTS;
// the zygote answers with an error text (empty on success) and, on
// success, a pidfd of the new init.

// zygote is the host's end.
type zygote struct {
	mu   sync.Mutex
	sock *os.File // our end of the socket pair
	proc *os.Process
}

type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// startZygote starts the helper: a plain fork and exec (vfork: no
// namespaces yet) of this binary with an empty environment.
func startZygote() (*zygote, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, &startError{fmt.Errorf("socketpair: %w", err)}
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "zygote"), os.NewFile(uintptr(pair[1]), "zygote-peer")
	defer theirs.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		ours.Close()
		return nil, &startError{err}
	}
	defer devnull.Close()
	p, err := os.StartProcess("/proc/self/exe", []string{zygoteArg0}, &os.ProcAttr{
		Env:   []string{},
		Files: []*os.File{devnull, devnull, os.Stderr, theirs},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		ours.Close()
		return nil, &startError{fmt.Errorf("start zygote: %w", err)}
	}
	return &zygote{sock: ours, proc: p}, nil
}

// fork asks the zygote for a new init with files as its descriptors 0, 1,
// 2, ...; it returns the init's pidfd.
func (z *zygote) fork(hostID int, files []*os.File) (*os.File, error) {
	if len(files) > 64 {
		return nil, &startError{fmt.Errorf("%d descriptors, at most 64", len(files))}
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	sock := int(z.sock.Fd())
	if err := unix.Sendmsg(sock, binary.NativeEndian.AppendUint32(nil, uint32(hostID)), unix.UnixRights(fds...), nil, 0); err != nil {
		return nil, fmt.Errorf("zygote: send: %w", err)
	}
	buf := make([]byte, 512)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("zygote: receive: %w", err)
		}
		if n == 0 {
			return nil, errors.New("zygote: exited")
		}
		got, err := parseRights(oob[:oobn])
		if err != nil {
			return nil, fmt.Errorf("zygote: reply: %w", err)
		}
		if msg := string(bytes.TrimRight(buf[:n], "\x00")); msg != "" {
			for _, fd := range got {
				unix.Close(fd)
			}
			return nil, &startError{errors.New(msg)}
		}
		if len(got) != 1 {
			return nil, fmt.Errorf("zygote: reply carried %d descriptors, want 1", len(got))
		}
		// Non-blocking, so that the runtime's poller can wait on it.
		if err := unix.SetNonblock(got[0], true); err != nil {
			unix.Close(got[0])
			return nil, fmt.Errorf("zygote: pidfd: %w", err)
		}
		return os.NewFile(uintptr(got[0]), "pidfd"), nil
	}
}

func parseRights(oob []byte) ([]int, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	for _, m := range msgs {
		r, err := unix.ParseUnixRights(&m)
		if err != nil {
			return nil, err
		}
		fds = append(fds, r...)
	}
	return fds, nil
}

// close stops the zygote, after any fork under way: it exits when its
// socket closes. With wait, close returns once it has.
func (z *zygote) close(wait bool) {
	z.mu.Lock()
	z.sock.Close()
	z.mu.Unlock()
	if wait {
		z.proc.Wait()
	} else {
		z.proc.Release()
	}
}
