// Building the sandbox's root, in init's own mount namespace: on a tmpfs
// over /tmp, the mounts, /etc files and writable tmpfs the setup lists,
// and a fresh /proc with the host's parts masked; init joins the run's
// cgroups on the way, then pivots into the root and makes it read-only.

#include "internal.h"

#define NEWROOT "/tmp" // a tmpfs in init's own mount namespace covers it

static int sys_move_mount(int from_dfd, const char *from, int to_dfd, const char *to, unsigned flags) {
	return (int)syscall(SYS_move_mount, from_dfd, from, to_dfd, to, flags);
}

static int sys_mount_setattr(int dfd, const char *path, unsigned flags, struct mount_attr *attr) {
	return (int)syscall(SYS_mount_setattr, dfd, path, flags, attr, sizeof *attr);
}

static void path_in_root(char *buf, size_t size, const char *p) {
	if ((size_t)snprintf(buf, size, "%s%s", NEWROOT, p) >= size) {
		errno = ENAMETOOLONG;
		fail("path %s", p);
	}
}

// mask_proc hides what the fresh /proc shows of the host rather than of
// the sandbox, as Docker's masked paths do: /dev/null over files (they
// read as empty) and an empty read-only tmpfs over directories. Paths this
// kernel does not have are skipped, and so are the files only the host's
// root may read (kcore, timer_list, ...). Nothing Python or its libraries
// read is among them (/proc/cpuinfo, /proc/stat and /proc/meminfo stay);
// the per-process files (mountinfo) cannot be covered this way.
static void mask_proc(void) {
	static const char *files[] = {
		"/proc/cmdline",       // the host kernel's boot parameters
		"/proc/config.gz",     // its build configuration
		"/proc/kallsyms",      // its symbols and modules
		"/proc/locks",         // every lock on the host, by device and inode
		"/proc/sched_debug",   // the host's tasks (older kernels)
		"/proc/latency_stats", // with CONFIG_LATENCYTOP
	};
	static const char *dirs[] = {
		"/proc/sys/kernel", // boot_id, osrelease, core_pattern, tainted, ...
		"/proc/sys/fs",     // binfmt_misc, host-wide file counts
		"/proc/sys/dev",    // the host's devices
		"/proc/acpi",       "/proc/asound", "/proc/scsi",
	};
	char target[4096], null[4096], first[4096] = "";
	path_in_root(null, sizeof null, "/dev/null");
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		path_in_root(target, sizeof target, files[i]);
		if (mount(null, target, NULL, MS_BIND, NULL) < 0 && errno != ENOENT)
			fail("mask %s", files[i]);
	}
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		path_in_root(target, sizeof target, dirs[i]);
		// One tmpfs; the other directories get binds of it, read-only
		// as it is.
		int r;
		if (first[0])
			r = mount(first, target, NULL, MS_BIND, NULL);
		else
			r = mount("masked", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			          "size=4k,nr_inodes=1,mode=0555");
		if (r < 0 && errno == ENOENT)
			continue;
		if (r < 0)
			fail("mask %s", dirs[i]);
		if (!first[0])
			memcpy(first, target, sizeof first);
	}
}

void build_root(void) {
	char target[4096], src[4096];
	if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("make mounts private");
	if (mount("sandbox", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,nr_inodes=4096,mode=0755") < 0)
		fail("mount root tmpfs");
	int fd = FIRST_MOUNT_FD;
	for (size_t i = 0; i < setup.nmounts; i++) {
		struct mount_spec *m = &setup.mounts[i];
		path_in_root(target, sizeof target, m->target);
		switch (m->kind) {
		case MOUNT_DIR:
			if (mkdir_p(target, 0755) < 0)
				fail("mkdir %s", m->target);
			break;
		case MOUNT_SYMLINK:
			if (mkdir_parent(target) < 0 || symlink(m->link, target) < 0)
				fail("symlink %s", m->target);
			break;
		case MOUNT_TREE:
		case MOUNT_BIND:
			if (mkdir_parent(target) < 0)
				fail("mkdir for %s", m->target);
			if (m->is_file) {
				int f = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
				if (f < 0)
					fail("create %s", m->target);
				close(f);
			} else if (mkdir(target, 0755) < 0 && errno != EEXIST) {
				fail("mkdir %s", m->target);
			}
			if (m->kind == MOUNT_TREE) {
				if (sys_move_mount(fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH) < 0)
					fail("mount %s", m->target);
				close(fd);
				fd++;
			} else {
				if (mount(m->source, target, NULL, MS_BIND | MS_REC, NULL) < 0)
					fail("bind %s", m->source);
				struct mount_attr attr = {.attr_set = m->attr};
				if (sys_mount_setattr(AT_FDCWD, target, AT_RECURSIVE, &attr) < 0)
					fail("lock %s", m->target);
			}
			break;
		default:
			failx("unknown mount kind %u", m->kind);
		}
	}
	// The cgroup.procs files follow the trees: init joins the run's
	// cgroup now, off the run's path (a migration costs RCU grace
	// periods), and the program inherits it at the fork.
	for (uint32_t i = 0; i < setup.ncgroups; i++, fd++) {
		if (write(fd, "0", 1) != 1)
			fail("join cgroup");
		close(fd);
	}
	for (size_t i = 0; i < setup.netc; i++) {
		if (!safe_name(setup.etc[i].name))
			failx("bad /etc file name");
		snprintf(src, sizeof src, "/etc/%s", setup.etc[i].name);
		path_in_root(target, sizeof target, src);
		write_file(target, setup.etc[i].data, setup.etc[i].len, 0644);
	}

	// The writable part: one tmpfs for /mnt/data, /tmp and /dev/shm, so
	// that the disk limit bounds them all together.
	path_in_root(target, sizeof target, WORK);
	if (mkdir_p(target, 0755) < 0)
		fail("mkdir %s", WORK);
	char opts[128];
	snprintf(opts, sizeof opts, "size=%llu,nr_inodes=16384,mode=0755", (unsigned long long)setup.disk);
	if (mount("sandbox-work", target, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		fail("mount work tmpfs");
	static const struct {
		const char *name;
		mode_t mode;
		const char *bind;
	} dirs[] = {{"data", 0755, NULL}, {"tmp", 01777, "/tmp"}, {"shm", 01777, "/dev/shm"}};
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(src, sizeof src, "%s%s/%s", NEWROOT, WORK, dirs[i].name);
		if (mkdir(src, dirs[i].mode) < 0 || chmod(src, dirs[i].mode) < 0)
			fail("mkdir %s", src);
		if (!dirs[i].bind)
			continue;
		path_in_root(target, sizeof target, dirs[i].bind);
		if (mkdir_p(target, 0755) < 0)
			fail("mkdir %s", dirs[i].bind);
		if (mount(src, target, NULL, MS_BIND, NULL) < 0)
			fail("bind %s", dirs[i].bind);
	}
	for (size_t i = 0; i < setup.ntmp; i++) {
		if (!safe_name(setup.tmp[i].name))
			failx("bad /tmp file name");
		snprintf(src, sizeof src, "%s%s/tmp/%s", NEWROOT, WORK, setup.tmp[i].name);
		write_file(src, setup.tmp[i].data, setup.tmp[i].len, 0644);
	}

	// A fresh /proc for the new PID namespace.
	path_in_root(target, sizeof target, "/proc");
	if (mkdir_p(target, 0555) < 0)
		fail("mkdir /proc");
	if (mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		fail("mount /proc");
	// No user namespaces inside: creating one needs no privilege and would
	// hand the program a fresh set of capabilities to probe the kernel with.
	path_in_root(target, sizeof target, "/proc/sys/user/max_user_namespaces");
	int f = open(target, O_WRONLY | O_CLOEXEC);
	if (f < 0 || write(f, "0", 1) != 1)
		fail("disable nested user namespaces");
	close(f);
	mask_proc();
	static const char *links[][2] = {
		{"/proc/self/fd", "/dev/fd"}, {"/proc/self/fd/0", "/dev/stdin"},
		{"/proc/self/fd/1", "/dev/stdout"}, {"/proc/self/fd/2", "/dev/stderr"},
	};
	for (size_t i = 0; i < sizeof links / sizeof links[0]; i++) {
		path_in_root(target, sizeof target, links[i][1]);
		if (symlink(links[i][0], target) < 0)
			fail("symlink %s", links[i][1]);
	}
	if (sethostname("sandbox", 7) < 0)
		fail("sethostname");
	// pivot_root(".", ".") stacks the old root under the new one; the
	// detached unmount then drops every host mount from this namespace.
	if (chdir(NEWROOT) < 0)
		fail("chdir");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		fail("pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		fail("unmount old root");
	if (chdir("/") < 0)
		fail("chdir /");
	if (mount("", "/", NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		fail("make root read-only");
}
