//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeCgroupfs builds a cgroup v2 tree under a temporary directory: the
// root, and the process's own group at own with the given controllers.
// mode 0o555 makes the group read-only to fakeWritable.
func fakeCgroupfs(t *testing.T, own, controllers string, mode os.FileMode) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, own)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n", "cgroup.subtree_control": "", "cgroup.procs": "",
	} {
		os.WriteFile(filepath.Join(root, name), []byte(data), 0o644)
	}
	for name, data := range map[string]string{
		"cgroup.controllers": controllers + "\n", "cgroup.subtree_control": "", "cgroup.procs": "1\n" + strconv.Itoa(os.Getpid()) + "\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), mode&0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(dir, mode)
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	return root
}

// fakeWritable judges by the owner's write bit, so that the test means
// the same as root, which may write anything.
func fakeWritable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&0o200 != 0
}

// TestDetectDelegatedCgroup runs the detection of a delegated cgroup v2
// group against fake cgroup file systems. (This host has cgroup v1 and no
// container engine; the real thing is not tested here.)
func TestDetectDelegatedCgroup(t *testing.T) {
	const own = "/system.slice/sandpiper.service"
	self := "0::" + own + "\n"
	v1Self := "9:name=systemd:/\n8:pids:/\n4:memory:/x\n1:cpu:/\n0::/\n"
	for _, tc := range []struct {
		name        string
		own         string
		controllers string
		mode        os.FileMode
		self        string
		noV2        bool // the root is no cgroup v2 file system
		wantErr     string
		wantCPU     bool
	}{
		{"delegated and writable", own, "cpu memory pids", 0o755, self, false, "", true},
		{"delegated without the cpu controller", own, "memory pids", 0o755, self, false, "", false},
		{"container: the namespace's root", "/", "cpu io memory pids", 0o755, "0::/\n", false, "", true},
		{"without the memory controller", own, "cpu pids", 0o755, self, false, "no memory and pids controllers", false},
		{"read-only", own, "cpu memory pids", 0o555, self, false, "not delegated", false},
		{"cgroup v1", own, "", 0o755, v1Self, true, "no cgroup v2", false},
		{"in no v2 group", own, "cpu memory pids", 0o755, "4:memory:/x\n", false, "no cgroup v2 group", false},
		{"own group not visible", own, "cpu memory pids", 0o755, "0::/elsewhere\n", false, "not visible", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeCgroupfs(t, tc.own, tc.controllers, tc.mode)
			if tc.noV2 {
				os.Remove(filepath.Join(root, "cgroup.controllers"))
			}
			c, err := detectCgroups(cgroupHost{root: root, self: tc.self, writable: fakeWritable}, false)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("cgroups %v, err %v: want an error saying %q", c, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(root, tc.own)
			want := filepath.Join(dir, cgroupName, "p"+strconv.Itoa(os.Getpid()))
			if c.v2 != want || !c.delegated || c.v2CPU != tc.wantCPU || c.hasCPU() != tc.wantCPU {
				t.Errorf("cgroups %+v, want v2 %s, delegated, cpu %v", c, want, tc.wantCPU)
			}
			enabled, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
			wantEnabled := "+memory +pids"
			if tc.wantCPU {
				wantEnabled += " +cpu"
			}
			if string(enabled) != wantEnabled {
				t.Errorf("%s/cgroup.subtree_control = %q, want %q", tc.own, enabled, wantEnabled)
			}
			// The group's processes moved to the leaf (the fake keeps
			// the last one written).
			moved, err := os.ReadFile(filepath.Join(dir, delegatedLeaf, "cgroup.procs"))
			if err != nil || string(moved) != strconv.Itoa(os.Getpid()) {
				t.Errorf("leaf's cgroup.procs = %q (%v), want this process moved there", moved, err)
			}
			// A run's limits (the fake has no kernel to make a group's
			// files, so setLimits writes them into a plain directory).
			run := filepath.Join(c.v2, "0123456789abcdef")
			if err := os.Mkdir(run, 0o755); err != nil {
				t.Fatal(err)
			}
			rc := &runCgroup{v2: true, mem: run, pids: run}
			if c.v2CPU {
				rc.cpu = run
			}
			if err := rc.setLimits(64<<20, 9, 0.5); err != nil {
				t.Fatal(err)
			}
			for file, want := range map[string]string{"memory.max": "67108864", "pids.max": "9", "cpu.max": "50000 100000"} {
				got, err := os.ReadFile(filepath.Join(run, file))
				if file == "cpu.max" && !tc.wantCPU {
					if err == nil {
						t.Errorf("cpu.max written without the cpu controller")
					}
					continue
				}
				if string(got) != want {
					t.Errorf("%s = %q (%v), want %q", file, got, err, want)
				}
			}
		})
	}
	t.Run("privileged, at the root", func(t *testing.T) {
		root := fakeCgroupfs(t, own, "cpu memory pids", 0o755)
		c, err := detectCgroups(cgroupHost{root: root, self: self, writable: fakeWritable}, true)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(root, cgroupName, "p"+strconv.Itoa(os.Getpid())); c.v2 != want || c.delegated || !c.v2CPU {
			t.Errorf("cgroups %+v, want v2 %s at the root", c, want)
		}
	})
}

func TestCPUQuotaValue(t *testing.T) {
	for _, tc := range []struct {
		cpus float64
		want int64
	}{{1, 100000}, {0.5, 50000}, {2, 200000}, {1.25, 125000}, {0.001, 1000}} {
		if got := cpuQuota(tc.cpus); got != tc.want {
			t.Errorf("cpuQuota(%v) = %d, want %d", tc.cpus, got, tc.want)
		}
	}
}
