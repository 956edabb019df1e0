//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"context"
	"encoding/binary"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// runFilter runs the seccomp program over one call as the kernel would:
// struct seccomp_data is nr, arch, the instruction pointer and six
// arguments, loaded in 32-bit words in host byte order.
func runFilter(t *testing.T, prog []unix.SockFilter, arch uint32, nr uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.NativeEndian.PutUint32(data[0:], nr)
	binary.NativeEndian.PutUint32(data[4:], arch)
	for i, a := range args {
		binary.NativeEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.NativeEndian.Uint32(data[in.K:])
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K, unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			var ok bool
			switch in.Code &^ (unix.BPF_JMP | unix.BPF_K) {
			case unix.BPF_JEQ:
				ok = acc == in.K
			case unix.BPF_JGE:
				ok = acc >= in.K
			case unix.BPF_JGT:
				ok = acc > in.K
			case unix.BPF_JSET:
				ok = acc&in.K != 0
			}
			if ok {
				pc += int(in.Jt)
			} else {
				pc += int(in.Jf)
			}
		default:
			t.Fatalf("instruction %d: opcode %#x not simulated", pc, in.Code)
		}
	}
	t.Fatal("the program ran off its end")
	return 0
}

// TestSeccompFilterDecisions checks the filter's answer to each kind of
// call, instruction by instruction.
func TestSeccompFilterDecisions(t *testing.T) {
	prog := seccompFilter()
	if len(prog) > unix.BPF_MAXINSNS {
		t.Fatalf("%d instructions, more than the kernel takes", len(prog))
	}
	const notify = unix.SECCOMP_RET_USER_NOTIF
	for _, tc := range []struct {
		name string
		nr   uintptr
		args []uint64
		want uint32
	}{
		{"socket AF_UNIX", unix.SYS_SOCKET, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, retAllow},
		{"socket AF_INET", unix.SYS_SOCKET, []uint64{unix.AF_INET, unix.SOCK_DGRAM, 0}, retAllow},
		{"socket AF_INET6", unix.SYS_SOCKET, []uint64{unix.AF_INET6, unix.SOCK_STREAM, 0}, retAllow},
		{"socket AF_NETLINK route", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE}, retAllow},
		{"socket AF_NETLINK audit", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_AUDIT}, notify},
		{"socket AF_NETLINK uevent", unix.SYS_SOCKET, []uint64{unix.AF_NETLINK, unix.SOCK_DGRAM, unix.NETLINK_KOBJECT_UEVENT}, notify},
		{"socket AF_VSOCK", unix.SYS_SOCKET, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0}, notify},
		{"socket AF_PACKET", unix.SYS_SOCKET, []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, notify},
		{"socket AF_ALG", unix.SYS_SOCKET, []uint64{unix.AF_ALG, unix.SOCK_SEQPACKET, 0}, notify},
		{"socket AF_BLUETOOTH", unix.SYS_SOCKET, []uint64{unix.AF_BLUETOOTH, unix.SOCK_STREAM, 0}, notify},
		{"socket AF_UNSPEC", unix.SYS_SOCKET, []uint64{unix.AF_UNSPEC, unix.SOCK_STREAM, 0}, notify},
		{"socketpair AF_UNIX", unix.SYS_SOCKETPAIR, []uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0, 0}, retAllow},
		{"socketpair AF_PACKET", unix.SYS_SOCKETPAIR, []uint64{unix.AF_PACKET, unix.SOCK_RAW, 0, 0}, notify},
		{"socketpair AF_VSOCK", unix.SYS_SOCKETPAIR, []uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0, 0}, notify},
		{"inotify_init1", unix.SYS_INOTIFY_INIT1, []uint64{0}, retENOSY},
		{"fanotify_init", unix.SYS_FANOTIFY_INIT, []uint64{0, 0}, retEPERM},
		{"fcntl F_NOTIFY", unix.SYS_FCNTL, []uint64{3, unix.F_NOTIFY, 1 /* DN_ACCESS */}, retEINVAL},
		{"fcntl F_SETLEASE", unix.SYS_FCNTL, []uint64{3, unix.F_SETLEASE, unix.F_RDLCK}, retEINVAL},
		{"fcntl F_SETLK", unix.SYS_FCNTL, []uint64{3, unix.F_SETLK, 0}, retAllow},
		{"fcntl F_GETFL", unix.SYS_FCNTL, []uint64{3, unix.F_GETFL}, retAllow},
		{"fcntl F_SETPIPE_SZ 1 MiB", unix.SYS_FCNTL, []uint64{3, unix.F_SETPIPE_SZ, 1 << 20}, retEPERM},
		{"fcntl F_SETPIPE_SZ 64 KiB", unix.SYS_FCNTL, []uint64{3, unix.F_SETPIPE_SZ, 64 << 10}, retAllow},
		{"fcntl F_SETPIPE_SZ 4 KiB", unix.SYS_FCNTL, []uint64{3, unix.F_SETPIPE_SZ, 4 << 10}, retAllow},
		{"setsockopt SO_SNDBUF", unix.SYS_SETSOCKOPT, []uint64{3, unix.SOL_SOCKET, unix.SO_SNDBUF}, retIgnore},
		{"setsockopt SO_RCVBUF", unix.SYS_SETSOCKOPT, []uint64{3, unix.SOL_SOCKET, unix.SO_RCVBUF}, retIgnore},
		{"setsockopt SO_REUSEADDR", unix.SYS_SETSOCKOPT, []uint64{3, unix.SOL_SOCKET, unix.SO_REUSEADDR}, retAllow},
		{"setsockopt TCP_NODELAY", unix.SYS_SETSOCKOPT, []uint64{3, unix.IPPROTO_TCP, unix.TCP_NODELAY}, retAllow},
		{"clone3", unix.SYS_CLONE3, nil, retENOSY},
		{"clone with a new user namespace", unix.SYS_CLONE, []uint64{unix.CLONE_NEWUSER}, retEPERM},
		{"plain clone", unix.SYS_CLONE, []uint64{uint64(unix.SIGCHLD)}, retAllow},
		{"TIOCSTI", unix.SYS_IOCTL, []uint64{0, unix.TIOCSTI}, retEPERM},
		{"read", unix.SYS_READ, []uint64{0, 0, 0}, retAllow},
		{"connect", unix.SYS_CONNECT, []uint64{3, 0, 16}, retAllow},
		{"ptrace", unix.SYS_PTRACE, nil, retEPERM},
		{"semget", unix.SYS_SEMGET, []uint64{0, 32000, 0o600}, retENOSY},
		{"semtimedop", unix.SYS_SEMTIMEDOP, []uint64{0, 0, 1, 0}, retENOSY},
		{"msgget", unix.SYS_MSGGET, []uint64{0, 0o600}, retENOSY},
		{"msgsnd", unix.SYS_MSGSND, []uint64{0, 0, 1, 0}, retENOSY},
		{"shmget", unix.SYS_SHMGET, []uint64{0, 4096, 0o600}, retAllow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runFilter(t, prog, auditArch, uint32(tc.nr), tc.args...); got != tc.want {
				t.Errorf("filter returned %#x, want %#x", got, tc.want)
			}
		})
	}
	if got := runFilter(t, prog, auditArch^1, unix.SYS_READ); got != retKill {
		t.Errorf("a foreign architecture: %#x, want kill", got)
	}
}

// TestSocketFamilies checks that families outside the allowlist are
// refused with EAFNOSUPPORT and reported as a cap, and that what Python
// uses still works and reports none.
func TestSocketFamilies(t *testing.T) {
	s := newTestSandbox(t)
	const refused = `import errno, socket
def refused(f, *args):
    try:
        f(*args)
    except OSError as e:
        assert e.errno == errno.EAFNOSUPPORT, (args, e)
        return
    raise SystemExit("not refused: %r" % (args,))
`
	for _, tc := range []struct {
		name    string
		code    string
		refused bool // the run reports CapSocketFamily
	}{
		{"AF_VSOCK", refused + `refused(socket.socket, socket.AF_VSOCK, socket.SOCK_STREAM)
print("OK")`, true},
		{"AF_PACKET", refused + `refused(socket.socket, socket.AF_PACKET, socket.SOCK_RAW)
print("OK")`, true},
		{"AF_ALG", refused + `refused(socket.socket, socket.AF_ALG, socket.SOCK_SEQPACKET)
print("OK")`, true},
		{"AF_NETLINK not route", refused + `refused(socket.socket, socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_KOBJECT_UEVENT if hasattr(socket, "NETLINK_KOBJECT_UEVENT") else 15)
refused(socket.socket, socket.AF_NETLINK, socket.SOCK_RAW, 9)  # NETLINK_AUDIT
print("OK")`, true},
		{"socketpair AF_PACKET", refused + `refused(socket.socketpair, socket.AF_PACKET, socket.SOCK_RAW)
print("OK")`, true},
		{"refused in a child process", refused + `import os
pid = os.fork()
if pid == 0:
    refused(socket.socket, socket.AF_VSOCK, socket.SOCK_STREAM)
    os._exit(0)
assert os.waitpid(pid, 0)[1] == 0
print("OK")`, true},
		{"allowed families", `import socket
for fam, typ in [(socket.AF_UNIX, socket.SOCK_STREAM), (socket.AF_UNIX, socket.SOCK_DGRAM), (socket.AF_INET, socket.SOCK_STREAM),
                 (socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_INET6, socket.SOCK_STREAM), (socket.AF_INET6, socket.SOCK_DGRAM)]:
    socket.socket(fam, typ).close()
socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE).close()
a, b = socket.socketpair()
a.sendall(b"x"); assert b.recv(1) == b"x"
print("OK")`, false},
		{"name lookups and interfaces", `import socket
assert socket.getaddrinfo("localhost", 80)
assert socket.getaddrinfo("localhost", 80, flags=socket.AI_ADDRCONFIG)
assert [n for _, n in socket.if_nameindex()] == ["lo"]
print("OK")`, false},
		{"multiprocessing and asyncio", `import asyncio, multiprocessing, uuid
def square(x): return x * x
if __name__ == "__main__":
    with multiprocessing.Pool(2) as p:
        assert p.map(square, [1, 2, 3]) == [1, 4, 9]
    q = multiprocessing.Queue(); q.put(1); assert q.get() == 1
    async def main():
        r, w = await asyncio.open_connection(sock=__import__("socket").socketpair()[0])
        w.close()
        return 1
    assert asyncio.run(main()) == 1
    uuid.uuid1(); uuid.uuid4()
    print("OK")`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, s, tc.code, sandbox.Limits{Timeout: 20 * time.Second})
			if string(res.Stdout) != "OK\n" || res.ExitCode != 0 {
				t.Errorf("exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
			}
			if got := slices.Contains(res.Caps, sandbox.CapSocketFamily); got != tc.refused {
				t.Errorf("caps %v: socket_family reported %v, want %v", res.Caps, got, tc.refused)
			}
		})
	}
}

// logRecords keeps the attributes of the records logged with one message.
type logRecords struct {
	mu    sync.Mutex
	msg   string
	attrs []map[string]slog.Value
}

func (l *logRecords) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecords) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecords) WithGroup(string) slog.Handler            { return l }
func (l *logRecords) Handle(_ context.Context, r slog.Record) error {
	if r.Message != l.msg {
		return nil
	}
	m := map[string]slog.Value{}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value; return true })
	l.mu.Lock()
	l.attrs = append(l.attrs, m)
	l.mu.Unlock()
	return nil
}

// TestSocketRefusalStorm has 8 threads ask for a refused family 10,000
// times in all: init answers each promptly and counts every one.
func TestSocketRefusalStorm(t *testing.T) {
	logs := &logRecords{msg: "sandbox: socket families refused"}
	s, err := New(t.Context(), Config{Python: testPython(), Concurrency: 1, Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	code := `import errno, socket, threading
errs = []
def storm():
    for _ in range(1250):
        try:
            socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
        except OSError as e:
            errs.append(e.errno)
threads = [threading.Thread(target=storm) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(len(errs), set(errs) == {errno.EAFNOSUPPORT})`
	res := run(t, s, code, sandbox.Limits{Timeout: 30 * time.Second})
	if string(res.Stdout) != "10000 True\n" || res.Limit == sandbox.LimitTimeout {
		t.Fatalf("stdout %q stderr %q limit %q", res.Stdout, res.Stderr, res.Limit)
	}
	if res.Duration > 15*time.Second {
		t.Errorf("10,000 refusals took %v", res.Duration)
	}
	t.Logf("10,000 refusals in %v", res.Duration)
	if !slices.Contains(res.Caps, sandbox.CapSocketFamily) {
		t.Errorf("caps %v lack socket_family", res.Caps)
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.attrs) != 1 || logs.attrs[0]["calls"].Uint64() != 10000 {
		t.Errorf("logged %v, want one record of 10000 calls", logs.attrs)
	}
}
