//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroups creates one memory+pids cgroup per run, on cgroup v2 where its
// memory and pids controllers are available, else on the v1 memory and
// pids hierarchies. A nil *cgroups means the host offers neither (or does
// not let this user create groups): rlimits then stand alone.
type cgroups struct {
	v2   string // v2: the parent directory of the runs' groups
	mem  string // v1: memory/sandpiper/p<pid>
	pids string // v1: pids/sandpiper/p<pid>
}

const cgroupRoot = "/sys/fs/cgroup"

// cgroupName is the group under which each bot process has its own,
// p<pid>, under which each sandbox has one. The process's group stays for
// the process's life (several Sandboxes may share it); the next start
// removes the groups of processes that no longer exist, with whatever a
// bot that died without cleaning up (killed, crashed) left in them.
const cgroupName = "sandpiper"

// processGroup returns this process's group under base, created, after
// sweeping away the groups of dead processes.
func processGroup(base string, v2 bool) (string, error) {
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create %s: %w", base, err)
	}
	if v2 {
		if err := os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte("+memory +pids"), 0); err != nil {
			return "", fmt.Errorf("enable cgroup v2 controllers in %s: %w", base, err)
		}
	}
	sweep(base)
	dir := filepath.Join(base, "p"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	if v2 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory +pids"), 0); err != nil {
			return "", fmt.Errorf("enable cgroup v2 controllers in %s: %w", dir, err)
		}
	}
	return dir, nil
}

// sweep removes, under base, the groups of bot processes that are gone
// (and sandbox groups left directly under base by older versions). A group
// that still holds a process is never removed: rmdir refuses it.
func sweep(base string) {
	ents, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		if pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "p")); err == nil && strings.HasPrefix(e.Name(), "p") {
			if unix.Kill(pid, 0) != unix.ESRCH {
				continue // alive (or not ours to judge)
			}
			subs, _ := os.ReadDir(dir)
			for _, sub := range subs {
				if sub.IsDir() {
					unix.Rmdir(filepath.Join(dir, sub.Name()))
				}
			}
		}
		unix.Rmdir(dir)
	}
}

// detectCgroups prepares the parent groups, or returns why it cannot.
func detectCgroups() (*cgroups, error) {
	if ctrl, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		have := strings.Fields(string(ctrl))
		if contains(have, "memory") && contains(have, "pids") {
			return detectV2()
		}
	}
	mem, pids := filepath.Join(cgroupRoot, "memory"), filepath.Join(cgroupRoot, "pids")
	if _, err := os.Stat(filepath.Join(mem, "memory.limit_in_bytes")); err != nil {
		return nil, errors.New("no cgroup v2 memory and pids controllers and no cgroup v1 memory hierarchy")
	}
	if _, err := os.Stat(filepath.Join(pids, "cgroup.procs")); err != nil {
		return nil, errors.New("no cgroup v1 pids hierarchy")
	}
	c := &cgroups{}
	var err error
	if c.mem, err = processGroup(filepath.Join(mem, cgroupName), false); err != nil {
		return nil, err
	}
	if c.pids, err = processGroup(filepath.Join(pids, cgroupName), false); err != nil {
		return nil, err
	}
	return c, nil
}

func detectV2() (*cgroups, error) {
	// Our own group must not hold processes and enable controllers at
	// once, so the runs' parent is a sibling at the root.
	if err := os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+memory +pids"), 0); err != nil {
		return nil, fmt.Errorf("enable cgroup v2 controllers: %w", err)
	}
	dir, err := processGroup(filepath.Join(cgroupRoot, cgroupName), true)
	if err != nil {
		return nil, err
	}
	return &cgroups{v2: dir}, nil
}

func (c *cgroups) String() string {
	if c == nil {
		return "none"
	}
	if c.v2 != "" {
		return "v2 " + c.v2
	}
	return "v1 " + c.mem + ", " + c.pids
}

// runCgroup is one run's group (two directories on v1).
type runCgroup struct {
	dirs []string
	// join are the cgroup.procs files (one per v1 hierarchy, one on v2)
	// that init writes itself into, off the run's path; the program
	// inherits the group at its fork.
	join []*os.File
	v2   bool
}

type cgroupSetting struct{ file, value string }

type cgroupDir struct {
	dir      string
	settings []cgroupSetting
}

// create makes the group for one run with the given limits.
func (c *cgroups) create(id string, memory int64, pids int) (*runCgroup, error) {
	rc := &runCgroup{v2: c.v2 != ""}
	mem, max := strconv.FormatInt(memory, 10), strconv.Itoa(pids)
	var plan []cgroupDir
	if rc.v2 {
		plan = []cgroupDir{{filepath.Join(c.v2, id), []cgroupSetting{{"memory.max", mem}, {"memory.swap.max", "0"}, {"pids.max", max}}}}
	} else {
		plan = []cgroupDir{
			{filepath.Join(c.mem, id), []cgroupSetting{{"memory.limit_in_bytes", mem}, {"memory.memsw.limit_in_bytes", mem}}},
			{filepath.Join(c.pids, id), []cgroupSetting{{"pids.max", max}}},
		}
	}
	for _, p := range plan {
		if err := os.Mkdir(p.dir, 0o755); err != nil {
			rc.remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		rc.dirs = append(rc.dirs, p.dir)
		for _, s := range p.settings {
			err := os.WriteFile(filepath.Join(p.dir, s.file), []byte(s.value), 0)
			if err != nil && !(errors.Is(err, fs.ErrNotExist) && (s.file == "memory.memsw.limit_in_bytes" || s.file == "memory.swap.max")) {
				rc.remove()
				return nil, fmt.Errorf("cgroup: set %s: %w", s.file, err)
			}
		}
		f, err := os.OpenFile(filepath.Join(p.dir, "cgroup.procs"), os.O_WRONLY, 0)
		if err != nil {
			rc.remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		rc.join = append(rc.join, f)
	}
	return rc, nil
}

// closeJoin closes the host's copies of the join files.
func (rc *runCgroup) closeJoin() {
	for _, f := range rc.join {
		f.Close()
	}
	rc.join = nil
}

// oomKilled reports whether the memory limit killed a process of the run.
func (rc *runCgroup) oomKilled() bool {
	if rc.v2 {
		return readKeyed(filepath.Join(rc.dirs[0], "memory.events"), "oom_kill") > 0
	}
	return readKeyed(filepath.Join(rc.dirs[0], "memory.oom_control"), "oom_kill") > 0
}

// pidsMaxHit reports whether a fork or thread creation hit the limit.
func (rc *runCgroup) pidsMaxHit() bool {
	return readKeyed(filepath.Join(rc.dirs[len(rc.dirs)-1], "pids.events"), "max") > 0
}

// memoryPeak returns the most memory the run used, 0 if unknown.
func (rc *runCgroup) memoryPeak() int64 {
	name := "memory.max_usage_in_bytes"
	if rc.v2 {
		name = "memory.peak"
	}
	b, err := os.ReadFile(filepath.Join(rc.dirs[0], name))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// remove deletes the group. Its processes are gone once the sandbox's init
// has been reaped, but the kernel may take a moment to let go of the group.
func (rc *runCgroup) remove() error {
	rc.closeJoin()
	var errs []error
	for _, d := range rc.dirs {
		var err error
		for i := 0; i < 50; i++ {
			err = unix.Rmdir(d)
			if err == nil || err == unix.ENOENT {
				err = nil
				break
			}
			if err != unix.EBUSY {
				break
			}
			time.Sleep(time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cgroup: remove %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// readKeyed returns the value of key in a "key value" lines file.
func readKeyed(file, key string) int64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		k, v, ok := strings.Cut(s.Text(), " ")
		if ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// setLimits sets the run's memory and process limits. On v1 the memory
// limit may never exceed memory+swap, so the order of the writes depends on
// the direction of the change.
func (rc *runCgroup) setLimits(memory int64, pids int) error {
	mem, max := strconv.FormatInt(memory, 10), strconv.Itoa(pids)
	write := func(dir, file, value string) error {
		err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0)
		if errors.Is(err, fs.ErrNotExist) && (file == "memory.memsw.limit_in_bytes" || file == "memory.swap.max") {
			return nil
		}
		return err
	}
	if rc.v2 {
		return errors.Join(write(rc.dirs[0], "memory.max", mem), write(rc.dirs[0], "pids.max", max))
	}
	if err := write(rc.dirs[0], "memory.limit_in_bytes", mem); err != nil {
		// Raising: memory+swap first.
		if err := write(rc.dirs[0], "memory.memsw.limit_in_bytes", mem); err != nil {
			return fmt.Errorf("set memory.memsw.limit_in_bytes: %w", err)
		}
		if err := write(rc.dirs[0], "memory.limit_in_bytes", mem); err != nil {
			return fmt.Errorf("set memory.limit_in_bytes: %w", err)
		}
	} else if err := write(rc.dirs[0], "memory.memsw.limit_in_bytes", mem); err != nil {
		return fmt.Errorf("set memory.memsw.limit_in_bytes: %w", err)
	}
	if err := write(rc.dirs[1], "pids.max", max); err != nil {
		return fmt.Errorf("set pids.max: %w", err)
	}
	return nil
}
