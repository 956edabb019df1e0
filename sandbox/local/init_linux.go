//go:build linux && (amd64 || arm64)

package local

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// newRoot is where init builds the sandbox's root before pivoting into it.
// It is a tmpfs mounted in init's private mount namespace, so the host's
// directory of that name is only covered, never touched.
const newRoot = "/tmp"

// Main runs the sandbox's init when this process was started as one, and
// never returns then; otherwise it returns at once.
func Main() {
	if len(os.Args) == 0 {
		return
	}
	switch os.Args[0] {
	case zygoteArg0:
		zygoteMain()
		syscall.Exit(0)
	case initArg0:
	default:
		return
	}
	start := time.Now()
	res := initMain(start)
	w := os.NewFile(resultFD, "result")
	code := 0
	if err := gob.NewEncoder(w).Encode(res); err != nil {
		code = 3
	}
	w.Close()
	// syscall.Exit, not os.Exit: nothing is left to flush, and a race-
	// enabled test binary would otherwise sleep a second at exit.
	syscall.Exit(code)
}

func initMain(start time.Time) (res initResult) {
	// Nothing inside may stop init with a signal: the Go runtime would
	// otherwise exit on SIGTERM or an asynchronous SIGSEGV.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs)
	go func() {
		for range sigs {
		}
	}()
	// Only 0, 1 and 2 may reach the program: every other descriptor init
	// was given (the result pipe, mount trees, cgroup files) stays init's.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return initResult{Err: fmt.Sprintf("close_range: %v", err)}
	}
	// /proc/1 must not be readable by the program, which has the same uid.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)

	dec := gob.NewDecoder(bufio.NewReader(os.Stdin))
	var setup initSetup
	if err := dec.Decode(&setup); err != nil {
		return initResult{Err: fmt.Sprintf("read setup: %v", err)}
	}
	cgroupFD, err := buildRoot(&setup)
	if err != nil {
		return initResult{Err: err.Error()}
	}
	f, err := newForker(&setup, cgroupFD)
	if err != nil {
		return initResult{Err: err.Error()}
	}
	// Ready: wait for the one run.
	var run initRun
	if err := dec.Decode(&run); err != nil {
		return initResult{Err: fmt.Sprintf("read run: %v", err)}
	}
	os.Stdin.Close()
	start = time.Now()
	if run.Limits.DiskSize != setup.DiskSize {
		if err := unix.Mount("", workMount, "", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d", run.Limits.DiskSize)); err != nil {
			return initResult{Err: fmt.Sprintf("resize %s: %v", workMount, err)}
		}
	}
	if err := writeInputs(sandbox.WorkDir, run.Files); err != nil {
		return initResult{Err: err.Error()}
	}
	res, err = supervise(&setup, &run, f, start)
	if err != nil {
		return initResult{Err: err.Error()}
	}
	return res
}

// workMount is the tmpfs holding /mnt/data, /tmp and /dev/shm.
const workMount = "/mnt"

// buildRoot assembles the sandbox's file system and pivots into it. It
// returns the first cgroup.procs descriptor.
func buildRoot(req *initSetup) (cgroupFD int, err error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return 0, fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("sandbox", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=1m,nr_inodes=4096,mode=0755"); err != nil {
		return 0, fmt.Errorf("mount root tmpfs: %w", err)
	}
	fd := firstMountFD // the trees' file descriptors, in order
	for _, m := range req.Mounts {
		target := filepath.Join(newRoot, m.Target)
		switch m.Kind {
		case mountDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return 0, fmt.Errorf("mkdir %s: %w", m.Target, err)
			}
		case mountSymlink:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return 0, fmt.Errorf("mkdir %s: %w", m.Target, err)
			}
			if err := os.Symlink(m.Link, target); err != nil {
				return 0, fmt.Errorf("symlink %s: %w", m.Target, err)
			}
		case mountTree, mountBind:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return 0, fmt.Errorf("mkdir %s: %w", m.Target, err)
			}
			if m.IsFile {
				if err := os.WriteFile(target, nil, 0o644); err != nil {
					return 0, fmt.Errorf("create %s: %w", m.Target, err)
				}
			} else if err := os.Mkdir(target, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return 0, fmt.Errorf("mkdir %s: %w", m.Target, err)
			}
			if m.Kind == mountBind {
				if err := bindReadOnly(m, target); err != nil {
					return 0, err
				}
				continue
			}
			if err := unix.MoveMount(fd, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
				return 0, fmt.Errorf("mount %s: %w", m.Target, err)
			}
			unix.Close(fd)
			fd++
		}
	}
	cgroupFD = fd
	for _, f := range req.EtcFiles {
		p := filepath.Join(newRoot, "etc", f.Name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return 0, err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return 0, fmt.Errorf("write /etc/%s: %w", f.Name, err)
		}
	}

	// The writable part: one tmpfs for /mnt/data, /tmp and /dev/shm, so
	// that Limits.DiskSize bounds them all together.
	work := filepath.Join(newRoot, "mnt")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return 0, err
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0755", req.DiskSize, 16384)
	if err := unix.Mount("sandbox-work", work, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return 0, fmt.Errorf("mount work tmpfs: %w", err)
	}
	for _, d := range []struct {
		name string
		mode os.FileMode
		bind string
	}{
		{"data", 0o755, ""},
		{"tmp", 0o1777, "tmp"},
		{"shm", 0o1777, "dev/shm"},
	} {
		p := filepath.Join(work, d.name)
		if err := os.Mkdir(p, d.mode); err != nil {
			return 0, err
		}
		if err := os.Chmod(p, d.mode); err != nil { // past the umask
			return 0, err
		}
		if d.bind == "" {
			continue
		}
		dst := filepath.Join(newRoot, d.bind)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return 0, err
		}
		if err := unix.Mount(p, dst, "", unix.MS_BIND, ""); err != nil {
			return 0, fmt.Errorf("bind /%s: %w", d.bind, err)
		}
	}

	if err := writeInputs(filepath.Join(work, "tmp"), req.TmpFiles); err != nil {
		return 0, err
	}

	// A fresh /proc for the new PID namespace.
	procDir := filepath.Join(newRoot, "proc")
	if err := os.MkdirAll(procDir, 0o555); err != nil {
		return 0, err
	}
	if err := unix.Mount("proc", procDir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return 0, fmt.Errorf("mount /proc: %w", err)
	}
	// No user namespaces inside: creating one needs no privilege and
	// would hand the program a fresh set of capabilities to probe the
	// kernel with. (The other namespaces need capabilities it lacks.)
	if err := os.WriteFile(filepath.Join(procDir, "sys/user/max_user_namespaces"), []byte("0"), 0); err != nil {
		return 0, fmt.Errorf("disable nested user namespaces: %w", err)
	}
	for _, l := range [][2]string{{"/proc/self/fd", "dev/fd"}, {"/proc/self/fd/0", "dev/stdin"}, {"/proc/self/fd/1", "dev/stdout"}, {"/proc/self/fd/2", "dev/stderr"}} {
		if err := os.Symlink(l[0], filepath.Join(newRoot, l[1])); err != nil {
			return 0, fmt.Errorf("symlink /%s: %w", l[1], err)
		}
	}

	if err := unix.Sethostname([]byte("sandbox")); err != nil {
		return 0, fmt.Errorf("sethostname: %w", err)
	}
	if err := unix.Chdir(newRoot); err != nil {
		return 0, err
	}
	// pivot_root(".", ".") stacks the old root under the new one; the
	// detached unmount then drops every host mount from this namespace.
	if err := unix.PivotRoot(".", "."); err != nil {
		return 0, fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return 0, fmt.Errorf("unmount old root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return 0, err
	}
	if err := unix.Mount("", "/", "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
		return 0, fmt.Errorf("make root read-only: %w", err)
	}
	return cgroupFD, nil
}

// bindReadOnly bind-mounts the host path m.Source at target and applies
// m.Attr (read-only, nosuid, nodev...), which may only add restrictions.
func bindReadOnly(m initMount, target string) error {
	if err := unix.Mount(m.Source, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", m.Source, err)
	}
	attr := unix.MountAttr{Attr_set: m.Attr}
	if err := unix.MountSetattr(unix.AT_FDCWD, target, unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("lock %s: %w", m.Target, err)
	}
	return nil
}

// writeInputs places the request's files in dir.
func writeInputs(dir string, files []sandbox.File) error {
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("input %s: %w", f.Name, err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return fmt.Errorf("input %s: %w", f.Name, err)
		}
	}
	return nil
}

// forker owns the OS thread the program is forked from. While the sandbox
// waits in the pool, the thread joins the run's cgroup (on cgroup v1 a
// migration costs RCU grace periods, milliseconds that would otherwise
// delay the run; v2 forks straight into the group with CLONE_INTO_CGROUP),
// so the program is limited from its first instruction, and drops every
// privilege (no_new_privs, capabilities, Landlock, seccomp), which the
// program inherits. At the run it only forks. Init's other threads keep
// what they need to clean up.
type forker struct {
	run  chan forkRequest
	done chan forkResult
}

type forkRequest struct {
	argv []string
}

type forkResult struct {
	pid int
	err error
}

func newForker(req *initSetup, cgroupFD int) (*forker, error) {
	f := &forker{run: make(chan forkRequest), done: make(chan forkResult, 1)}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: the thread exits with this goroutine.
		sys := &syscall.SysProcAttr{Setsid: true}
		// No Pdeathsig: it would fire when this thread exits. The program
		// dies with init, through the PID namespace.
		if err := joinCgroup(req, cgroupFD, sys); err != nil {
			ready <- err
			return
		}
		devnull, err := os.Open("/dev/null")
		if err != nil {
			ready <- fmt.Errorf("open /dev/null: %w", err)
			return
		}
		defer devnull.Close()
		// The thread needs no privilege after this: drop them now, off
		// the run's path.
		if err := lockdownThread(req.CgroupV2); err != nil {
			ready <- err
			return
		}
		ready <- nil
		r := <-f.run
		pid, err := syscall.ForkExec(req.Python, r.argv, &syscall.ProcAttr{
			Dir:   sandbox.WorkDir,
			Env:   req.Env,
			Files: []uintptr{devnull.Fd(), 1, 2},
			Sys:   sys,
		})
		f.done <- forkResult{pid, err}
	}()
	return f, <-ready
}

// supervise runs the program, enforces the deadline, reaps every process,
// and collects the output files.
func supervise(req *initSetup, run *initRun, f *forker, start time.Time) (initResult, error) {
	var res initResult
	setLimits(run.Limits) // inherited by the program at the fork
	f.run <- forkRequest{argv: []string{"python3", "-c", run.Code}}
	s := <-f.done
	if s.err != nil {
		return res, fmt.Errorf("start %s: %w", req.Python, s.err)
	}
	res.Started = time.Since(start)
	limitProgram(s.pid, run.Limits, req.CgroupFDs > 0)

	var timedOut atomic.Bool
	timer := time.AfterFunc(run.Limits.Timeout-time.Since(start), func() {
		timedOut.Store(true)
		unix.Kill(-1, unix.SIGKILL)
	})
	var status unix.WaitStatus
	for {
		pid, err := unix.Wait4(-1, &status, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("wait: %w", err)
		}
		if pid == s.pid {
			break
		}
	}
	timer.Stop()
	res.Ended = time.Since(start)
	res.TimedOut = timedOut.Load()
	// Whatever the program left behind goes with it.
	unix.Kill(-1, unix.SIGKILL)
	for {
		var st unix.WaitStatus
		_, err := unix.Wait4(-1, &st, 0, nil)
		if err == unix.ECHILD {
			break
		}
	}
	// Every process that held the program's stdout and stderr is gone; with
	// init's own copies closed, the host reads them to the end now.
	unix.Close(1)
	unix.Close(2)
	switch {
	case status.Exited():
		res.Exited, res.ExitCode = true, status.ExitStatus()
	case status.Signaled():
		res.Signal = int(status.Signal())
		res.ExitCode = 128 + res.Signal
	}
	var st unix.Statfs_t
	if unix.Statfs(workMount, &st) == nil && st.Bavail*uint64(st.Bsize) < 64<<10 {
		res.DiskFull = true
	}
	res.Files, res.Omitted = collect(sandbox.WorkDir, run.Files, run.Limits)
	res.Reported = time.Since(start)
	return res, nil
}

// setLimits sets the rlimits that bind init harmlessly (its CPU time is
// small, it writes no files and holds few descriptors), so that the program
// inherits them at fork.
func setLimits(l sandbox.Limits) {
	cpu := uint64((l.CPUTime + time.Second - 1) / time.Second)
	set := func(res int, soft, hard uint64) {
		unix.Setrlimit(res, &unix.Rlimit{Cur: soft, Max: hard})
	}
	set(unix.RLIMIT_CPU, cpu, cpu+1)
	set(unix.RLIMIT_FSIZE, uint64(l.DiskSize), uint64(l.DiskSize))
	set(unix.RLIMIT_NOFILE, uint64(l.OpenFiles), uint64(l.OpenFiles))
	set(unix.RLIMIT_CORE, 0, 0)
	set(unix.RLIMIT_MEMLOCK, 64<<10, 64<<10)
}

// limitProgram sets on the program, right after its exec, the rlimits that
// would bind init's runtime (threads, address space). They back up the
// cgroup limits the program already has from birth; without cgroups they
// are the only bound, and apply from the interpreter's start-up on.
func limitProgram(pid int, l sandbox.Limits, cgroups bool) {
	set := func(res int, v uint64) {
		unix.Prlimit(pid, res, &unix.Rlimit{Cur: v, Max: v}, nil)
	}
	// Init's own threads run as the same user and count here too.
	set(unix.RLIMIT_NPROC, uint64(l.Processes+initThreads))
	if !cgroups {
		set(unix.RLIMIT_AS, uint64(l.Memory))
	}
}

// joinCgroup moves the calling thread into the run's cgroup (v1), or sets
// up the fork to place the child there (v2, CLONE_INTO_CGROUP).
func joinCgroup(req *initSetup, cgroupFD int, sys *syscall.SysProcAttr) error {
	if req.CgroupFDs == 0 {
		return nil
	}
	if req.CgroupV2 {
		sys.UseCgroupFD, sys.CgroupFD = true, cgroupFD
		return nil
	}
	tid := []byte(strconv.Itoa(unix.Gettid()))
	for i := 0; i < req.CgroupFDs; i++ {
		if _, err := unix.Write(cgroupFD+i, tid); err != nil {
			return fmt.Errorf("join cgroup: %w", err)
		}
	}
	return nil
}

// initThreads is the headroom in RLIMIT_NPROC for init's own threads.
const initThreads = 16

// collect returns the files under dir that are not among the inputs
// unchanged, within the limits; symbolic links and special files are
// never followed or read.
func collect(dir string, inputs []sandbox.File, lim sandbox.Limits) (files []sandbox.File, omitted []string) {
	in := make(map[string][]byte, len(inputs))
	for _, f := range inputs {
		in[f.Name] = f.Data
	}
	var names []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return nil
		case d.Type().IsRegular():
			names = append(names, rel)
		default:
			omitted = append(omitted, rel+" (not a regular file)")
		}
		return nil
	})
	sort.Strings(names)
	budget := lim.DiskSize
	for _, name := range names {
		data, err := readNoFollow(path.Join(dir, name), budget)
		if err != nil {
			omitted = append(omitted, fmt.Sprintf("%s (%v)", name, err))
			continue
		}
		if old, ok := in[name]; ok && bytes.Equal(old, data) {
			continue
		}
		if len(files) >= lim.Files {
			omitted = append(omitted, name+" (too many files)")
			continue
		}
		budget -= int64(len(data))
		files = append(files, sandbox.File{Name: name, Data: data})
	}
	return files, omitted
}

var errTooBig = errors.New("too large")

func readNoFollow(p string, max int64) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > max {
		return nil, errTooBig
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, err
	}
	return data, nil
}

// lockdownThread drops every privilege of the calling OS thread, which is
// what a process forked from it inherits.
func lockdownThread(allowClone3 bool) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := dropCapabilities(); err != nil {
		return err
	}
	if err := restrictLandlock(); err != nil {
		return err
	}
	if err := installSeccomp(allowClone3); err != nil {
		return err
	}
	return nil
}

func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop bounding capability %d: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}
