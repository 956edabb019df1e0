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

// cgroups creates one cgroup per run, with memory, pids and (where the
// controller is there) CPU limits: on cgroup v2 where its memory and pids
// controllers are available to this process, else on the v1 memory, pids
// and cpu hierarchies. A nil *cgroups means the host offers neither (or
// does not let this user create groups): rlimits and init's memory watcher
// then stand alone.
type cgroups struct {
	v2    string // v2: the parent directory of the runs' groups
	v2CPU bool   // v2: the cpu controller is enabled for them
	// delegated: the v2 group is this process's own, delegated to it (a
	// container's or a systemd unit's), not one made at the root.
	delegated bool
	mem       string // v1: memory/sandpiper/p<pid>
	pids      string // v1: pids/sandpiper/p<pid>
	cpu       string // v1: cpu/sandpiper/p<pid>; empty without the cpu hierarchy
}

const cgroupRoot = "/sys/fs/cgroup"

// cpuPeriod is the CFS period of the runs' CPU quota, in microseconds (the
// kernel's default); the quota is CPUs times this.
const cpuPeriod = 100000

// cpuQuota is the quota, in microseconds per cpuPeriod, that lets a run use
// cpus CPUs; the kernel takes at least 1000.
func cpuQuota(cpus float64) int64 {
	return max(int64(cpus*cpuPeriod+0.5), 1000)
}

// cgroupName is the group under which each bot process has its own,
// p<pid>, under which each sandbox has one. The process's group stays for
// the process's life (several Sandboxes may share it); the next start
// removes the groups of processes that no longer exist, with whatever a
// bot that died without cleaning up (killed, crashed) left in them.
const cgroupName = "sandpiper"

// processGroup returns this process's group under base, created, after
// sweeping away the groups of dead processes. On v2, enable lists the
// controllers to enable for the groups below ("+memory +pids"); on v1 it
// is empty.
func processGroup(base, enable string) (string, error) {
	if err := os.Mkdir(base, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create %s: %w", base, err)
	}
	if enable != "" {
		if err := os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
			return "", fmt.Errorf("enable cgroup v2 controllers in %s: %w", base, err)
		}
	}
	sweep(base)
	dir := filepath.Join(base, "p"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	if enable != "" {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(enable), 0); err != nil {
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

// cgroupHost is what cgroup detection looks at: the cgroup file system's
// mount point, this process's /proc/self/cgroup, and a test of whether this
// process may write a path. Tests give a fake one.
type cgroupHost struct {
	root     string
	self     string // the contents of /proc/self/cgroup
	writable func(path string) bool
}

// realCgroupHost is this host's.
func realCgroupHost() cgroupHost {
	self, _ := os.ReadFile("/proc/self/cgroup")
	return cgroupHost{
		root:     cgroupRoot,
		self:     string(self),
		writable: func(p string) bool { return unix.Access(p, unix.W_OK) == nil },
	}
}

// detectCgroups prepares the parent groups, or returns why it cannot.
// Privileged (root with CAP_SYS_ADMIN on the host), it makes them at the
// root of cgroup v2, or in the v1 hierarchies; otherwise, and when that
// fails on v2 (in a container, the root is the container's own group), it
// uses the v2 group this process was delegated, if any.
func detectCgroups(h cgroupHost, privileged bool) (*cgroups, error) {
	ctrl, err := os.ReadFile(filepath.Join(h.root, "cgroup.controllers"))
	if err != nil { // not v2 at the root: v1, or hybrid without v2 controllers
		if !privileged {
			return nil, errors.New("no cgroup v2 file system (this host has cgroup v1, whose groups only root may create)")
		}
		return detectV1(h.root)
	}
	if privileged && contains(strings.Fields(string(ctrl)), "memory") && contains(strings.Fields(string(ctrl)), "pids") {
		c, err := detectV2Root(h.root, strings.Fields(string(ctrl)))
		if err == nil {
			return c, nil
		}
		d, derr := detectDelegated(h)
		if derr != nil {
			return nil, fmt.Errorf("%v; and %v", err, derr)
		}
		return d, nil
	}
	return detectDelegated(h)
}

func detectV1(root string) (*cgroups, error) {
	mem, pids, cpu := filepath.Join(root, "memory"), filepath.Join(root, "pids"), filepath.Join(root, "cpu")
	if _, err := os.Stat(filepath.Join(mem, "memory.limit_in_bytes")); err != nil {
		return nil, errors.New("no cgroup v2 memory and pids controllers and no cgroup v1 memory hierarchy")
	}
	if _, err := os.Stat(filepath.Join(pids, "cgroup.procs")); err != nil {
		return nil, errors.New("no cgroup v1 pids hierarchy")
	}
	c := &cgroups{}
	var err error
	if c.mem, err = processGroup(filepath.Join(mem, cgroupName), ""); err != nil {
		return nil, err
	}
	if c.pids, err = processGroup(filepath.Join(pids, cgroupName), ""); err != nil {
		return nil, err
	}
	// The CPU quota where the cpu hierarchy is mounted ("cpu" is often a
	// link to "cpu,cpuacct"); without it runs have none.
	if _, err := os.Stat(filepath.Join(cpu, "cpu.cfs_quota_us")); err == nil {
		if c.cpu, err = processGroup(filepath.Join(cpu, cgroupName), ""); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// enableV2 enables the memory and pids controllers, and cpu when it is
// available, for the groups below dir; it returns what it wrote.
func enableV2(dir string, available []string) (string, error) {
	file := filepath.Join(dir, "cgroup.subtree_control")
	if contains(available, "cpu") {
		// The cpu controller cannot be enabled while a real-time
		// thread is about: then runs have no quota.
		if err := os.WriteFile(file, []byte("+memory +pids +cpu"), 0); err == nil {
			return "+memory +pids +cpu", nil
		}
	}
	if err := os.WriteFile(file, []byte("+memory +pids"), 0); err != nil {
		return "", fmt.Errorf("enable cgroup v2 controllers in %s: %w", dir, err)
	}
	return "+memory +pids", nil
}

// detectV2Root makes the runs' parent a group at the root of the
// hierarchy, a sibling of this process's own group: a group may not hold
// processes and enable controllers at once.
func detectV2Root(root string, available []string) (*cgroups, error) {
	return runsGroup(root, available, false)
}

// runsGroup enables the available controllers for dir's children and
// makes the runs' parent group in dir.
func runsGroup(dir string, available []string, delegated bool) (*cgroups, error) {
	enable, err := enableV2(dir, available)
	if err != nil {
		return nil, err
	}
	runs, err := processGroup(filepath.Join(dir, cgroupName), enable)
	if err != nil {
		return nil, err
	}
	return &cgroups{v2: runs, v2CPU: strings.Contains(enable, "+cpu"), delegated: delegated}, nil
}

// delegatedLeaf is the group, inside the delegated one, that the
// processes found there (this one included) move to: a group with
// controllers enabled for its children may hold no processes itself.
const delegatedLeaf = "main"

// detectDelegated uses the cgroup v2 group this process is in when it may
// manage it (a systemd unit with Delegate=yes, a container given a
// writable cgroup namespace): its memory and pids controllers available,
// the group writable. It moves the group's processes into a leaf child,
// enables the controllers, and makes the runs' parent a sibling of the
// leaf.
func detectDelegated(h cgroupHost) (*cgroups, error) {
	var own string
	for _, line := range strings.Split(h.self, "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			own = p
		}
	}
	if own == "" || !strings.HasPrefix(own, "/") {
		return nil, errors.New("this process is in no cgroup v2 group (no 0:: line in /proc/self/cgroup)")
	}
	dir := filepath.Join(h.root, filepath.Clean(own))
	ctrl, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("this process's cgroup %s is not visible (%v); a container needs its own cgroup namespace (--cgroupns=private)", own, err)
	}
	available := strings.Fields(string(ctrl))
	if !contains(available, "memory") || !contains(available, "pids") {
		return nil, fmt.Errorf("this process's cgroup %s has no memory and pids controllers to delegate (it has %q)", own, strings.TrimSpace(string(ctrl)))
	}
	for _, p := range []string{dir, filepath.Join(dir, "cgroup.procs"), filepath.Join(dir, "cgroup.subtree_control")} {
		if !h.writable(p) {
			return nil, fmt.Errorf("this process's cgroup %s is not delegated to it (%s is not writable)", own, p)
		}
	}
	leaf := filepath.Join(dir, delegatedLeaf)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create %s: %w", leaf, err)
	}
	procs, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	for _, pid := range strings.Fields(string(procs)) {
		err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(pid), 0)
		if err != nil && !errors.Is(err, unix.ESRCH) { // ESRCH: it has exited
			return nil, fmt.Errorf("move process %s of the delegated cgroup %s into %s: %w", pid, own, leaf, err)
		}
	}
	return runsGroup(dir, available, true)
}

func (c *cgroups) String() string {
	if c == nil {
		return "none"
	}
	if c.v2 != "" {
		s := "v2 " + c.v2
		if c.delegated {
			s += " (delegated)"
		}
		if !c.v2CPU {
			s += ", no cpu controller"
		}
		return s
	}
	s := "v1 " + c.mem + ", " + c.pids
	if c.cpu != "" {
		s += ", " + c.cpu
	} else {
		s += ", no cpu hierarchy"
	}
	return s
}

// hasCPU reports whether the runs' groups get a CPU quota.
func (c *cgroups) hasCPU() bool { return c != nil && (c.v2CPU || c.cpu != "") }

// runCgroup is one run's group (a directory in each v1 hierarchy).
type runCgroup struct {
	dirs []string
	// join are the cgroup.procs files (one per v1 hierarchy, one on v2)
	// that init writes itself into, off the run's path; the program
	// inherits the group at its fork.
	join []*os.File
	v2   bool
	mem  string // the directories with each controller's files
	pids string
	cpu  string // empty without a CPU quota
}

type cgroupSetting struct{ file, value string }

type cgroupDir struct {
	dir      string
	settings []cgroupSetting
}

// create makes the group for one run with the given limits.
func (c *cgroups) create(id string, memory int64, pids int, cpus float64) (*runCgroup, error) {
	rc := &runCgroup{v2: c.v2 != ""}
	mem, max := strconv.FormatInt(memory, 10), strconv.Itoa(pids)
	quota := strconv.FormatInt(cpuQuota(cpus), 10)
	var plan []cgroupDir
	if rc.v2 {
		dir := filepath.Join(c.v2, id)
		settings := []cgroupSetting{{"memory.max", mem}, {"memory.swap.max", "0"}, {"pids.max", max}}
		rc.mem, rc.pids = dir, dir
		if c.v2CPU {
			settings = append(settings, cgroupSetting{"cpu.max", quota + " " + strconv.Itoa(cpuPeriod)})
			rc.cpu = dir
		}
		plan = []cgroupDir{{dir, settings}}
	} else {
		rc.mem, rc.pids = filepath.Join(c.mem, id), filepath.Join(c.pids, id)
		plan = []cgroupDir{
			{rc.mem, []cgroupSetting{{"memory.limit_in_bytes", mem}, {"memory.memsw.limit_in_bytes", mem}}},
			{rc.pids, []cgroupSetting{{"pids.max", max}}},
		}
		if c.cpu != "" {
			rc.cpu = filepath.Join(c.cpu, id)
			plan = append(plan, cgroupDir{rc.cpu, []cgroupSetting{{"cpu.cfs_period_us", strconv.Itoa(cpuPeriod)}, {"cpu.cfs_quota_us", quota}}})
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

// cgroupEvents counts what the group's limits did: processes the memory
// limit killed, forks and threads the pids limit refused, periods the CPU
// quota held the group back.
type cgroupEvents struct{ oomKills, pidsMax, throttled int64 }

// events reads the counts now. A run's are its group's counts past those
// read before the run (a sandbox that warmed has used its group already).
func (rc *runCgroup) events() cgroupEvents {
	return cgroupEvents{rc.oomKills(), rc.pidsMaxHits(), rc.throttles()}
}

// oomKills counts the processes of the group the memory limit killed.
func (rc *runCgroup) oomKills() int64 {
	if rc.v2 {
		return readKeyed(filepath.Join(rc.mem, "memory.events"), "oom_kill")
	}
	return readKeyed(filepath.Join(rc.mem, "memory.oom_control"), "oom_kill")
}

// pidsMaxHits counts the forks and thread creations that hit the limit.
func (rc *runCgroup) pidsMaxHits() int64 {
	return readKeyed(filepath.Join(rc.pids, "pids.events"), "max")
}

// throttles counts the periods the CPU quota held the group back.
func (rc *runCgroup) throttles() int64 {
	if rc.cpu == "" {
		return 0
	}
	return readKeyed(filepath.Join(rc.cpu, "cpu.stat"), "nr_throttled")
}

// resetPeak starts memoryPeak afresh, where the kernel allows (v1).
func (rc *runCgroup) resetPeak() {
	if !rc.v2 {
		os.WriteFile(filepath.Join(rc.mem, "memory.max_usage_in_bytes"), []byte("0"), 0)
	}
}

// memoryPeak returns the most memory the run used, 0 if unknown.
func (rc *runCgroup) memoryPeak() int64 {
	name := "memory.max_usage_in_bytes"
	if rc.v2 {
		name = "memory.peak"
	}
	b, err := os.ReadFile(filepath.Join(rc.mem, name))
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

// writeSetting writes value to a file of the group's directory dir; a
// swap limit the kernel lacks (swap accounting off) is no error.
func writeSetting(dir, file, value string) error {
	err := os.WriteFile(filepath.Join(dir, file), []byte(value), 0)
	if errors.Is(err, fs.ErrNotExist) && (file == "memory.memsw.limit_in_bytes" || file == "memory.swap.max") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("set %s: %w", file, err)
	}
	return nil
}

// setCPU sets the run's CPU quota, if it has one. Setting it refills the
// group's runtime for the current period (the kernel starts the period
// afresh), so a warm-up that used the period's quota just before the run
// does not hold the run back (nor make it count as throttled).
func (rc *runCgroup) setCPU(cpus float64) error {
	quota := strconv.FormatInt(cpuQuota(cpus), 10)
	switch {
	case rc.cpu == "":
		return nil
	case rc.v2:
		return writeSetting(rc.cpu, "cpu.max", quota+" "+strconv.Itoa(cpuPeriod))
	default:
		return writeSetting(rc.cpu, "cpu.cfs_quota_us", quota)
	}
}

// setLimits sets the run's memory, process and CPU limits. On v1 the
// memory limit may never exceed memory+swap, so the order of the writes
// depends on the direction of the change.
func (rc *runCgroup) setLimits(memory int64, pids int, cpus float64) error {
	mem, max := strconv.FormatInt(memory, 10), strconv.Itoa(pids)
	errs := []error{rc.setCPU(cpus), writeSetting(rc.pids, "pids.max", max)}
	if rc.v2 {
		errs = append(errs, writeSetting(rc.mem, "memory.max", mem))
		return errors.Join(errs...)
	}
	if err := writeSetting(rc.mem, "memory.limit_in_bytes", mem); err != nil {
		// Raising: memory+swap first.
		if err := writeSetting(rc.mem, "memory.memsw.limit_in_bytes", mem); err != nil {
			return errors.Join(append(errs, err)...)
		}
		errs = append(errs, writeSetting(rc.mem, "memory.limit_in_bytes", mem))
	} else {
		errs = append(errs, writeSetting(rc.mem, "memory.memsw.limit_in_bytes", mem))
	}
	return errors.Join(errs...)
}
