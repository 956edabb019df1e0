//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"slices"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestHostDetailsHidden checks what /proc and the seccomp filter keep of
// the host, and that what Python reads from them still works.
func TestHostDetailsHidden(t *testing.T) {
	s := newTestSandbox(t)
	code := `import ctypes, errno, multiprocessing, os, platform
assert open("/proc/cmdline", "rb").read() == b""
for d in ("/proc/sys/kernel", "/proc/sys/fs"):
    assert os.listdir(d) == [], (d, os.listdir(d))
for f in ("/proc/sys/kernel/osrelease", "/proc/sys/kernel/random/boot_id", "/proc/sys/kernel/core_pattern"):
    assert not os.path.exists(f), f
try:
    open("/proc/sys/kernel/x", "w")
    raise SystemExit("wrote under a masked directory")
except OSError as e:
    assert e.errno in (errno.EROFS, errno.EACCES), e
assert open("/proc/sys/user/max_user_namespaces").read().strip() == "0"
assert b"processor" in open("/proc/cpuinfo", "rb").read()
assert platform.uname().release and platform.platform()
assert os.cpu_count() >= 1 and multiprocessing.cpu_count() >= 1
assert os.sysconf("SC_NGROUPS_MAX") > 0
libc = ctypes.CDLL(None, use_errno=True)
assert libc.inotify_init1(0) == -1 and ctypes.get_errno() == errno.ENOSYS, ctypes.get_errno()
import fcntl, signal
signal.signal(signal.SIGIO, signal.SIG_IGN)
open("own", "w").close()
for cmd, path, arg in ((fcntl.F_NOTIFY, "/usr/lib", fcntl.DN_ACCESS | fcntl.DN_MULTISHOT), (fcntl.F_SETLEASE, "own", fcntl.F_RDLCK)):
    try:
        fcntl.fcntl(os.open(path, os.O_RDONLY), cmd, arg)
        raise SystemExit("fcntl %d on %s allowed" % (cmd, path))
    except OSError as e:
        assert e.errno == errno.EINVAL, e
print("OK")`
	res := run(t, s, code, sandbox.Limits{})
	if string(res.Stdout) != "OK\n" || res.ExitCode != 0 {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", res.ExitCode, res.Stdout, res.Stderr)
	}
	// The CPU quota may throttle any run on a busy host: not a cap this
	// program provokes.
	if caps := slices.DeleteFunc(slices.Clone(res.Caps), func(c sandbox.Cap) bool { return c == sandbox.CapCPUQuota }); len(caps) != 0 {
		t.Errorf("caps %v, want none", caps)
	}
}
