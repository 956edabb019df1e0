//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"encoding/hex"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestListingAbuse leaves in /mnt/data what would make the listing of the
// output files huge: thousands of FIFOs, sockets or symbolic links under
// long names, tens of thousands of files, names of escape characters, a
// tree deeper than the walk goes. What comes back must stay within the
// caps, cost the host little memory and time, and say it was cut.
//
// The work tmpfs holds 16,384 inodes, so each program makes as many as it
// can. Before the caps, the FIFO bomb's result listed 16,353 entries of
// 35 MB and cost the host 73 MB of allocations.
func TestListingAbuse(t *testing.T) {
	s := newTestSandbox(t)
	for _, tc := range []struct {
		name string
		code string
		// heap bounds what the host allocates in all during the run, and
		// made is the least the program must have made.
		heap int64
		made int
		// more: a last entry must say how many more were left out.
		more bool
		// also checks the result further.
		also func(t *testing.T, res *sandbox.Result)
	}{
		{"fifo bomb", `import os
made = 0
try:
    for level in range(30):
        os.mkdir(("d%02d" % level) * 50)
        os.chdir(("d%02d" % level) * 50)
        for i in range(667):
            os.mkfifo("p%05d" % made + "f" * 194)
            made += 1
except OSError as e:
    pass
print(made)`, 8 << 20, 15000, true, func(t *testing.T, res *sandbox.Result) {
			// The directories past sandbox.MaxPathLen were not looked into.
			if _, partial, _ := sandbox.ParseMoreOmitted(res.FilesOmitted[len(res.FilesOmitted)-1]); !partial {
				t.Errorf("last entry %q does not say others were not looked at", res.FilesOmitted[len(res.FilesOmitted)-1])
			}
		}},
		{"sockets", `import socket
made = 0
try:
    for i in range(20000):
        s = socket.socket(socket.AF_UNIX)
        s.bind("s%05d" % i + "x" * 100)
        s.close()
        made += 1
except OSError as e:
    pass
print(made)`, 8 << 20, 15000, true, nil},
		{"symlinks", `import os
made = 0
try:
    for i in range(20000):
        os.symlink("/etc/passwd", "l%05d" % i + "y" * 200)
        made += 1
except OSError:
    pass
print(made)`, 8 << 20, 15000, true, nil},
		{"empty files", `import os
made = 0
try:
    for i in range(100000):
        os.close(os.open("e%06d" % i, os.O_CREAT | os.O_WRONLY))
        made += 1
except OSError:
    pass
print(made)`, 8 << 20, 15000, true, func(t *testing.T, res *sandbox.Result) {
			// The walk stopped: the files are the first, in lexical
			// order, of those it looked at.
			if len(res.Files) != sandbox.DefaultFileCount || !slices.IsSortedFunc(res.Files, func(a, b sandbox.File) int { return strings.Compare(a.Name, b.Name) }) {
				t.Errorf("%d files, want %d in lexical order", len(res.Files), sandbox.DefaultFileCount)
			}
		}},
		{"more files than kept", `import os
for i in range(5000):
    open("f%04d" % i, "w").write(str(i))
print(5000)`, 8 << 20, 5000, true, func(t *testing.T, res *sandbox.Result) {
			// Fewer entries than the walk looks at: the files are the
			// first in lexical order, as without the caps.
			var names []string
			for _, f := range res.Files {
				names = append(names, f.Name)
			}
			if len(names) != sandbox.DefaultFileCount || names[0] != "f0000" || names[len(names)-1] != "f0063" {
				t.Errorf("files %q, want f0000 to f0063", names)
			}
			if res.FilesOmitted[0] != "f0064 (too many files)" {
				t.Errorf("first omitted %q, want f0064 (too many files)", res.FilesOmitted[0])
			}
			if n, partial, _ := sandbox.ParseMoreOmitted(res.FilesOmitted[len(res.FilesOmitted)-1]); n != 5000-64-sandbox.MaxOmitted || partial {
				t.Errorf("last omitted entry %q, want %d more, all looked at", res.FilesOmitted[len(res.FilesOmitted)-1], 5000-64-sandbox.MaxOmitted)
			}
		}},
		{"escape names", `import os
made = 0
try:
    for i in range(8000):
        os.close(os.open(b"\x1b[2J\x1b]0;x\x07" + b"\x1b" * 235 + b"%05d" % i, os.O_CREAT | os.O_WRONLY))
        os.mkfifo(b"\x1b" * 249 + b"%05d" % i + b"p")
        made += 2
except OSError:
    pass
print(made)`, 8 << 20, 15000, true, nil},
		{"long nested names", `import os
made = 0
for level in range(300):
    d = ("%03d" % level) * 85
    os.mkdir(d)
    os.chdir(d)
    open("f", "w").close()
    os.mkfifo("p")
    made += 1
print(made)`, 8 << 20, 300, false, func(t *testing.T, res *sandbox.Result) {
			if !slices.ContainsFunc(res.FilesOmitted, func(e string) bool { return strings.HasSuffix(e, "… (path too long; not looked into)") }) {
				t.Errorf("no directory omitted for its path's length: %q", res.FilesOmitted)
			}
		}},
		{"deep tree", `import os
made = 0
for level in range(2000):
    os.mkdir("d")
    os.chdir("d")
    os.mkfifo("p")
    made += 1
print(made)`, 8 << 20, 2000, false, func(t *testing.T, res *sandbox.Result) {
			deep := strings.Repeat("d/", sandbox.MaxDepth) + "d (too deep)"
			if !slices.Contains(res.FilesOmitted, deep) {
				t.Errorf("no %q in %q", deep, res.FilesOmitted)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			res := run(t, s, tc.code, sandbox.Limits{Timeout: time.Minute})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			alloc := int64(after.TotalAlloc - before.TotalAlloc)
			made, _ := strconv.Atoi(strings.TrimSpace(string(res.Stdout)))
			if made < tc.made || res.ExitCode != 0 {
				t.Fatalf("the program made %d entries, want at least %d: exit %d, stdout %q, stderr %q", made, tc.made, res.ExitCode, res.Stdout, res.Stderr)
			}
			size := checkListing(t, res, tc.more)
			t.Logf("%d made: %d files, %d omitted entries of %d bytes (last %q); host allocated %.1f MB; took %v",
				made, len(res.Files), len(res.FilesOmitted), size, res.FilesOmitted[len(res.FilesOmitted)-1], float64(alloc)/(1<<20), took.Round(time.Millisecond))
			if alloc > tc.heap {
				t.Errorf("the host allocated %d bytes during the run, want at most %d", alloc, tc.heap)
			}
			if took > 20*time.Second {
				t.Errorf("the run took %v", took)
			}
			if tc.also != nil {
				tc.also(t, res)
			}
			assertNoLeftovers(t)
			stillWorks(t, s)
		})
	}
}

// checkListing checks that res's files and omitted entries are within the
// caps, that the cut is recorded and, with more, that the last entry says
// how many more were left out; it returns the omitted entries' bytes.
func checkListing(t *testing.T, res *sandbox.Result, more bool) (size int) {
	t.Helper()
	if !slices.Contains(res.Caps, sandbox.CapResultList) {
		t.Errorf("caps %q, want %q", res.Caps, sandbox.CapResultList)
	}
	if len(res.Files) > sandbox.DefaultFileCount {
		t.Errorf("%d files", len(res.Files))
	}
	for _, f := range res.Files {
		if !sandbox.ValidName(f.Name) {
			t.Errorf("file name %q", f.Name)
		}
	}
	if len(res.FilesOmitted) > sandbox.MaxOmitted+1 || len(res.FilesOmitted) == 0 {
		t.Fatalf("%d omitted entries, want 1 to %d", len(res.FilesOmitted), sandbox.MaxOmitted+1)
	}
	list, last := res.FilesOmitted, ""
	if _, _, ok := sandbox.ParseMoreOmitted(list[len(list)-1]); ok {
		list, last = list[:len(list)-1], list[len(list)-1]
	} else if more {
		t.Errorf("last omitted entry %q does not say how many more", list[len(list)-1])
	}
	if len(list) > sandbox.MaxOmitted {
		t.Errorf("%d omitted entries before the last, want at most %d", len(list), sandbox.MaxOmitted)
	}
	for _, e := range list {
		if _, _, ok := sandbox.ParseMoreOmitted(e); ok {
			t.Errorf("%q before the last entry", e)
		}
		size += len(e)
		if len(e) > sandbox.MaxOmittedName+sandbox.MaxOmittedWhy+3 {
			t.Errorf("omitted entry of %d bytes: %q", len(e), e)
		}
	}
	if size > sandbox.MaxOmittedBytes {
		t.Errorf("omitted entries hold %d bytes, want at most %d", size, sandbox.MaxOmittedBytes)
	}
	return size + len(last)
}

// lockChannel is a program for one end of a covert channel between two
// concurrent runs through advisory locks on files every sandbox shares
// read-only (the interpreter's standard library): bits 0–7, a clock and
// an acknowledgement, each a lock the other end sees, in a handshake per
// byte. flock locks a file each; posix locks a byte each of one file and
// reads the other end's with F_GETLK. The sender prints the bytes/s it
// sent, the receiver what it received in hex.
func lockChannel(mode string, send bool, n int) string {
	return fmt.Sprintf(`import fcntl, glob, os, random, struct, time
mode, send, n = %q, %v, %d
files = sorted(glob.glob(os.path.dirname(os.__file__) + "/*.py"))[:11]
if mode == "flock":
    mine = [os.open(f, os.O_RDONLY) for f in files]
    probe = [os.open(f, os.O_RDONLY) for f in files]
    def put(i, on):
        fcntl.flock(mine[i], fcntl.LOCK_SH if on else fcntl.LOCK_UN)
    def seen(i):
        try:
            fcntl.flock(probe[i], fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(probe[i], fcntl.LOCK_UN)
        return False
else:
    fd = os.open(files[0], os.O_RDONLY)
    def put(i, on):
        fcntl.fcntl(fd, fcntl.F_SETLK, struct.pack("hhqqi", fcntl.F_RDLCK if on else fcntl.F_UNLCK, 0, i, 1, 0))
    def seen(i):
        return struct.unpack("hhqqi", fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack("hhqqi", fcntl.F_WRLCK, 0, i, 1, 0)))[0] != fcntl.F_UNLCK
CLOCK, ACK, READY = 8, 9, 10
clock = False
if send:
    data = random.Random(42).randbytes(n)
    while not seen(READY):
        pass
    start = time.monotonic()
    for v in data:
        for b in range(8):
            put(b, v >> b & 1)
        clock = not clock
        put(CLOCK, clock)
        while seen(ACK) != clock:
            pass
    print(n / (time.monotonic() - start))
else:
    put(READY, True)
    out = bytearray()
    while len(out) < n:
        while seen(CLOCK) == clock:
            pass
        clock = not clock
        out.append(sum(seen(b) << b for b in range(8)))
        put(ACK, clock)
    print(out.hex())
`, mode, map[bool]string{true: "True", false: "False"}[send], n)
}

// BenchmarkLockChannel measures that covert channel: two runs at once,
// one sending n pseudo-random bytes, the other receiving them, through
// flock and through POSIX byte-range locks. It reports the bits per
// second carried and the share of bytes received wrong. (The channel
// stays open: sqlite3 needs both kinds of lock on its files, and the
// sandbox cannot tell a shared file from a run's own without a race; see
// the package doc's threat model.)
func BenchmarkLockChannel(b *testing.B) {
	for _, mode := range []string{"flock", "posix"} {
		b.Run(mode, func(b *testing.B) {
			s := newBenchSandbox(b)
			const n = 2000
			want := lockChannelPayload(b, s, n)
			var bits, wrong float64
			for b.Loop() {
				var wg sync.WaitGroup
				var sent, got *sandbox.Result
				for _, send := range []bool{true, false} {
					wg.Go(func() {
						res, err := s.Run(b.Context(), sandbox.Request{Code: lockChannel(mode, send, n), Limits: sandbox.Limits{Timeout: time.Minute}})
						if err != nil || res.ExitCode != 0 {
							b.Errorf("send %v: %v %s", send, err, res.Stderr)
							return
						}
						if send {
							sent = res
						} else {
							got = res
						}
					})
				}
				wg.Wait()
				if sent == nil || got == nil {
					b.FailNow()
				}
				rate, _ := strconv.ParseFloat(strings.TrimSpace(string(sent.Stdout)), 64)
				bits += rate * 8
				recv, _ := hex.DecodeString(strings.TrimSpace(string(got.Stdout)))
				for i := range want {
					if i >= len(recv) || recv[i] != want[i] {
						wrong++
					}
				}
			}
			b.ReportMetric(bits/float64(b.N), "bits/s")
			b.ReportMetric(wrong/float64(b.N*n), "wrong/byte")
		})
	}
}

// lockChannelPayload is the bytes the sender sends: Python's
// random.Random(42).randbytes(n), asked of the sandbox.
func lockChannelPayload(b *testing.B, s *Sandbox, n int) []byte {
	res, err := s.Run(b.Context(), sandbox.Request{Code: fmt.Sprintf("import random\nprint(random.Random(42).randbytes(%d).hex())", n)})
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("%v %s", err, res.Stderr)
	}
	want, err := hex.DecodeString(strings.TrimSpace(string(res.Stdout)))
	if err != nil {
		b.Fatal(err)
	}
	return want
}

// kernelMemoryProbe is a program that tries to hold target bytes of kernel
// memory that no process maps, spread over procs processes (each may
// open only so many files): UNIX socket buffers (socket pairs, each
// asking for an 8 MiB send buffer, filled), pipe buffers (each asking for
// 1 MiB, filled) or netlink buffers (route sockets, each asking for an
// 8 MiB receive buffer, filled with the kernel's answers to dump
// requests). Each process counts what it holds, as the kernel reports it
// (a socket's unsent bytes, a pipe's unread bytes, a netlink socket's
// receive and send memory), and after each step prints what all the
// processes alive hold; the first prints "done" if every process got its
// share or all the files it could (and none was killed). The kernel's OOM killer (with a memory
// cgroup) takes the other processes first (each holds a little more).
func kernelMemoryProbe(kind string, target int64, procs int) string {
	return fmt.Sprintf(`import fcntl, mmap, os, socket, struct, termios, time
kind, target, procs = %q, %d, %d
held = mmap.mmap(-1, 24 * procs + 8)  # per process: bytes held, done, pid; then "go"
def slot(i, v, done=0):
    struct.pack_into("qqq", held, 24 * i, v, done, os.getpid())
def alive(pid):
    try:
        return open("/proc/%%d/stat" %% pid).read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
def report():  # what the processes alive hold now
    total = 0
    for j in range(procs):
        v, _, pid = struct.unpack_from("qqq", held, 24 * j)
        if v and alive(pid):
            total += v
    os.write(1, b"%%d\n" %% total)
dump = struct.pack("=IHHII", 32, 18, 0x301, 1, 0) + bytes(16)  # RTM_GETLINK, a dump
def netlink_bytes(inodes):
    total = 0
    for line in open("/proc/net/netlink").readlines()[1:]:
        f = line.split()
        if int(f[-1]) in inodes:
            total += int(f[4]) + int(f[5])
    return total
def pin(i):
    ballast = b"x" * (256 << 10)  # more resident than the first: the kernel's OOM killer takes these first
    while not held[-1]:
        time.sleep(0.001)
    share, keep, inodes, n = target // procs, [], set(), 0
    try:
        while n < share:
            if kind == "unix":
                a, b = socket.socketpair()
                keep += [a, b]
                a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 << 20)
                a.setblocking(False)
                try:
                    while True:
                        a.send(bytes(65536))
                except BlockingIOError:
                    pass
                n += struct.unpack("i", fcntl.ioctl(a, termios.TIOCOUTQ, bytes(4)))[0]
            elif kind == "pipe":
                r, w = os.pipe()
                keep += [r, w]
                try:
                    fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
                except OSError:
                    pass
                os.set_blocking(w, False)
                try:
                    while True:
                        os.write(w, bytes(4096))
                except BlockingIOError:
                    pass
                n += struct.unpack("i", fcntl.ioctl(r, termios.FIONREAD, bytes(4)))[0]
            else:
                s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
                keep.append(s)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
                s.setblocking(False)
                for _ in range(20000):
                    try:
                        s.send(dump)
                    except OSError:
                        break
                inodes.add(os.fstat(s.fileno()).st_ino)
                if len(keep) %% 4:
                    continue
                n = netlink_bytes(inodes)
            slot(i, n)
            report()
    except OSError:
        pass  # no more files for this process
    if kind == "netlink":
        n = netlink_bytes(inodes)
    slot(i, n, 1)
    report()
    time.sleep(120)
kids = []
for i in range(procs):
    pid = os.fork()
    if pid == 0:
        pin(i)
        os._exit(0)
    kids.append(pid)
held[-1] = 1
start, killed = time.monotonic(), False
while time.monotonic() - start < 100:
    for j, k in enumerate(kids):
        if k and os.waitpid(k, os.WNOHANG)[0]:
            kids[j], killed = 0, True
            struct.pack_into("qq", held, 24 * j, 0, 1)
    if all(struct.unpack_from("qq", held, 24 * j)[1] for j in range(procs)):
        print("killed" if killed else "done", flush=True)
        break
    time.sleep(0.01)
`, kind, target, procs)
}

// kernelMemoryCases try to hold their limit and twice MemoryMargin in
// kernel buffers that no process maps, more than the host may lose; the
// processes share it out. (Pipes are also bounded by the host user's pipe
// limits: after 64 MiB, 8 KiB a pipe.)
var kernelMemoryCases = []struct {
	kind  string
	limit int64
	procs int
}{
	{"unix", 96 << 20, 10},
	{"pipe", 48 << 20, 12},
	{"netlink", 96 << 20, 6},
}

// checkKernelMemory runs kernelMemoryCases in s: however a run holds
// kernel memory, the memory limit ends it, and what it held at once
// stays within its limit and MemoryMargin. s preloads nothing: the
// probes' processes are forks of a bare interpreter, which hold little
// of the limit themselves.
func checkKernelMemory(t *testing.T, s *Sandbox) {
	if len(s.preload) > 0 {
		t.Fatal("checkKernelMemory needs a sandbox that preloads nothing")
	}
	for _, tc := range kernelMemoryCases {
		t.Run(tc.kind, func(t *testing.T) {
			res := run(t, s, kernelMemoryProbe(tc.kind, tc.limit+2*MemoryMargin, tc.procs), sandbox.Limits{Memory: tc.limit, Timeout: 2 * time.Minute, Processes: tc.procs + 8})
			if res.Warm {
				t.Fatal("the probe ran warm")
			}
			lines := strings.Fields(string(res.Stdout))
			var most int64
			for _, l := range lines {
				if n, err := strconv.ParseInt(l, 10, 64); err == nil {
					most = max(most, n)
				}
			}
			done := slices.Contains(lines, "done")
			t.Logf("held at most %.1f MiB at once, the group's peak %.1f MiB (limit %d MiB, margin %d MiB); %s",
				float64(most)/(1<<20), float64(res.MemoryPeak)/(1<<20), tc.limit>>20, MemoryMargin>>20, map[bool]string{true: "it got all it asked for or could", false: fmt.Sprintf("ended by limit %q", res.Limit)}[done])
			if most > tc.limit+MemoryMargin {
				t.Errorf("the run held %d MiB of kernel memory at once, more than its limit of %d MiB and the margin of %d MiB", most>>20, tc.limit>>20, MemoryMargin>>20)
			}
			if done || res.Limit != sandbox.LimitMemory {
				t.Errorf("the run ended with limit %q, exit %d, stderr %q, done %v: want the memory limit", res.Limit, res.ExitCode, lastLine(res.Stderr), done)
			}
			// A cgroup charging these buffers may end the run before much
			// is counted: its peak then says the run got to its limit.
			if most < tc.limit/4 && res.MemoryPeak < tc.limit {
				t.Errorf("the probe held only %d MiB (the group's peak: %d MiB): it tests nothing (stdout %q, stderr %q)", most>>20, res.MemoryPeak>>20, lastLine(res.Stdout), lastLine(res.Stderr))
			}
			if res.MemoryPeak > tc.limit+MemoryMargin {
				t.Errorf("the run's group peaked at %d MiB", res.MemoryPeak>>20)
			}
			stillWorks(t, s)
		})
	}
	for _, kind := range []string{"semaphores", "message queues"} {
		t.Run("System V "+kind, func(t *testing.T) { checkSysVIPC(t, s, kind) })
	}
}

// sysvProbe is a program that tries to hold target bytes of kernel memory
// in System V semaphore arrays (32,000 semaphores each) or message queues
// (filled with 4,000-byte messages), and prints, after each step, what
// the IPC namespace holds as the kernel reports it in /proc/sysvipc (64
// bytes a semaphore, a cache line; a message's text and 96 bytes besides),
// then how the first refused call failed. Then it checks that
// multiprocessing's POSIX semaphores, locks and queues still work.
func sysvProbe(kind string, target int64) string {
	return fmt.Sprintf(`import ctypes, errno, multiprocessing as mp
kind, target = %q, %d
libc = ctypes.CDLL(None, use_errno=True)
def held():
    total = 0
    for line in open("/proc/sysvipc/sem").readlines()[1:]:
        total += int(line.split()[3]) * 64  # key semid perms nsems
    for line in open("/proc/sysvipc/msg").readlines()[1:]:
        f = line.split()
        total += int(f[3]) + 96 * int(f[4])  # key msqid perms cbytes qnum
    return total
def refused(what):
    e = ctypes.get_errno()
    print("refused", what, errno.errorcode.get(e, e), flush=True)
msg = ctypes.create_string_buffer(8 + 4000)
msg[0] = 1  # mtype
n = steps = 0
while n < target:
    if kind == "semaphores":
        if libc.semget(0, 32000, 0o600) < 0:
            refused("semget")
            break
    else:
        q = libc.msgget(0, 0o600)
        if q < 0:
            refused("msgget")
            break
        while libc.msgsnd(q, msg, 4000, 0o4000) == 0:  # IPC_NOWAIT: until the queue is full
            pass
        if ctypes.get_errno() != errno.EAGAIN:
            refused("msgsnd")
            break
    steps += 1
    if kind == "semaphores" or steps %% 256 == 0:  # a queue holds 16 KiB: read the list now and then
        n = held()
        print(n, flush=True)
def child(q, lock, sem):
    with lock, sem:
        q.put("posix ok")
q, lock, sem = mp.Queue(), mp.Lock(), mp.Semaphore(2)
p = mp.Process(target=child, args=(q, lock, sem))
p.start()
print(q.get(timeout=30))
p.join()
`, kind, target)
}

// checkSysVIPC runs sysvProbe in s, in every mode: System V semaphores
// and message queues are refused with ENOSYS before the run holds more
// than its limit and MemoryMargin in them, and the run goes on with
// POSIX semaphores.
func checkSysVIPC(t *testing.T, s *Sandbox, kind string) {
	const limit = 96 << 20
	res := run(t, s, sysvProbe(kind, limit+2*MemoryMargin), sandbox.Limits{Memory: limit, Timeout: 2 * time.Minute})
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	var most int64
	for _, l := range lines {
		if n, err := strconv.ParseInt(l, 10, 64); err == nil {
			most = max(most, n)
		}
	}
	t.Logf("held at most %.1f MiB at once (limit %d MiB, margin %d MiB); ended with limit %q, exit %d", float64(most)/(1<<20), limit>>20, MemoryMargin>>20, res.Limit, res.ExitCode)
	if most > limit+MemoryMargin {
		t.Errorf("the run held %d MiB of kernel memory in System V %s, more than its limit of %d MiB and the margin of %d MiB", most>>20, kind, limit>>20, MemoryMargin>>20)
	}
	call := map[string]string{"semaphores": "semget", "message queues": "msgget"}[kind]
	if !slices.Contains(lines, "refused "+call+" ENOSYS") || !slices.Contains(lines, "posix ok") || res.ExitCode != 0 || res.Limit != sandbox.LimitNone {
		t.Errorf("stdout %q, stderr %q, exit %d, limit %q: want %s refused with ENOSYS at once and POSIX semaphores working", lastLine(res.Stdout), lastLine(res.Stderr), res.ExitCode, res.Limit, call)
	}
}

// TestKernelMemory holds kernel memory no process maps, with the host's
// cgroups; TestUnprivileged runs the same without (init's watcher).
func TestKernelMemory(t *testing.T) {
	s := newColdSandbox(t)
	if s.cgroups == nil {
		t.Skip("no cgroups on this host (or not root); TestUnprivileged runs these without")
	}
	checkKernelMemory(t, s)
}

// newColdSandbox returns a sandbox of one run at a time that preloads
// nothing, closed when the test ends.
func newColdSandbox(t *testing.T) *Sandbox {
	t.Helper()
	s, err := New(t.Context(), Config{Python: testPython(), Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
