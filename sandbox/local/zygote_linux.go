//go:build linux && (amd64 || arm64)

package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The zygote is a small helper process, started once per Sandbox, that
// forks each sandbox's init. Creating a user namespace rules out vfork, so
// the forking process's whole address space is copied and then faulted back
// page by page; done from the bot, that costs in proportion to the bot's
// heap (measured: +24 ms per run with a 300 MB heap). The zygote's address
// space stays tiny.
//
// Protocol, over a SOCK_SEQPACKET socket pair: the host sends a
// zygoteRequest with the init's descriptors (stdin, stdout, stderr, result
// pipe, mount trees, cgroup files) as SCM_RIGHTS; the zygote answers with a
// zygoteReply and, on success, a pidfd of the new init.

const zygoteArg0 = "sandpiper-sandbox-zygote"

// initEnv is the environment of the zygote and of every init.
var initEnv = []string{"GOMAXPROCS=1", "GOGC=off", "GODEBUG=asyncpreemptoff=1"}

type zygoteRequest struct {
	HostID int // the host uid and gid the sandbox user maps to
}

type zygoteReply struct {
	Err string
}

// zygoteMain serves fork requests on fd 3 until the host closes it.
func zygoteMain() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGCHLD)
	go reapChildren(sigs)

	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*256))
	for {
		n, oobn, _, _, err := unix.Recvmsg(3, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			syscall.Exit(0) // the host is gone
		}
		fds, perr := parseRights(oob[:oobn])
		var req zygoteRequest
		jerr := json.Unmarshal(buf[:n], &req)
		reply, pidfd := zygoteReply{}, -1
		switch {
		case perr != nil:
			reply.Err = perr.Error()
		case jerr != nil:
			reply.Err = jerr.Error()
		case len(fds) < 4:
			reply.Err = fmt.Sprintf("got %d descriptors, want at least 4", len(fds))
		default:
			pidfd, err = forkInit(req, fds)
			if err != nil {
				reply.Err = err.Error()
			}
		}
		for _, fd := range fds {
			unix.Close(fd)
		}
		msg, _ := json.Marshal(reply)
		var rights []byte
		if pidfd >= 0 {
			rights = unix.UnixRights(pidfd)
		}
		unix.Sendmsg(3, msg, rights, nil, 0)
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
	}
}

// forkInit starts the sandbox's init in its new namespaces.
func forkInit(req zygoteRequest, fds []int) (pidfd int, err error) {
	files := make([]uintptr, len(fds))
	for i, fd := range fds {
		files[i] = uintptr(fd)
	}
	pidfd = -1
	_, err = syscall.ForkExec("/proc/self/exe", []string{initArg0}, &syscall.ProcAttr{
		// init's environment, and so /proc/1/environ, holds nothing of
		// the bot's: only runtime settings for a short-lived process that
		// needs one thread and no garbage collection.
		Env:   initEnv,
		Files: files,
		Sys: &syscall.SysProcAttr{
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID |
				syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS | syscall.CLONE_NEWCGROUP,
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: sandboxID, HostID: req.HostID, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: sandboxID, HostID: req.HostID, Size: 1}},
			GidMappingsEnableSetgroups: false,
			Credential:                 &syscall.Credential{Uid: sandboxID, Gid: sandboxID, NoSetGroups: true},
			// What init needs to build the root (and, SYS_RESOURCE, to turn
			// off nested user namespaces); the program gets none.
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_SYS_RESOURCE},
			Pdeathsig:   syscall.SIGKILL,
			Setsid:      true,
			PidFD:       &pidfd,
		},
	})
	if err != nil {
		return -1, err
	}
	if pidfd < 0 {
		return -1, errors.New("no pidfd (Linux 5.3 or later is needed)")
	}
	return pidfd, nil
}

// reapChildren collects every exited init so none stays a zombie.
func reapChildren(sigs <-chan os.Signal) {
	for range sigs {
		for {
			var st unix.WaitStatus
			pid, err := unix.Wait4(-1, &st, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
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

// zygote is the host's end.
type zygote struct {
	mu   sync.Mutex
	sock *os.File // our end of the socket pair
	proc *os.Process
}

// startZygote starts the helper. It is a plain fork and exec (vfork: no
// namespaces yet), with an empty environment.
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
		Env:   initEnv,
		Files: []*os.File{devnull, devnull, os.Stderr, theirs},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		ours.Close()
		return nil, &startError{fmt.Errorf("start zygote: %w", err)}
	}
	return &zygote{sock: ours, proc: p}, nil
}

type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// fork asks the zygote for a new init with these descriptors; it returns
// the init's pidfd.
func (z *zygote) fork(req zygoteRequest, files []*os.File) (*os.File, error) {
	msg, _ := json.Marshal(req)
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	sock := int(z.sock.Fd())
	if err := unix.Sendmsg(sock, msg, unix.UnixRights(fds...), nil, 0); err != nil {
		return nil, fmt.Errorf("zygote: send: %w", err)
	}
	buf := make([]byte, 4096)
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
		var reply zygoteReply
		if err := json.Unmarshal(buf[:n], &reply); err != nil {
			return nil, fmt.Errorf("zygote: reply: %w", err)
		}
		got, err := parseRights(oob[:oobn])
		if err != nil {
			return nil, fmt.Errorf("zygote: reply: %w", err)
		}
		if reply.Err != "" {
			for _, fd := range got {
				unix.Close(fd)
			}
			return nil, &startError{errors.New(reply.Err)}
		}
		if len(got) != 1 {
			return nil, fmt.Errorf("zygote: reply carried %d descriptors, want 1", len(got))
		}
		return os.NewFile(uintptr(got[0]), "pidfd"), nil
	}
}

// close stops the zygote, after any fork under way.
func (z *zygote) close() {
	z.mu.Lock()
	z.sock.Close()
	z.mu.Unlock()
	z.proc.Wait()
}
