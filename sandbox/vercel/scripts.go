package vercel

import (
	"strconv"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// launcher is the Python that starts the user's program inside the VM:
// it makes and enters the working directory, links sandbox.WorkDir to it
// where it can (so absolute /mnt/data paths work as with the local
// backend), sets the limits the VM itself does not give, then replaces
// itself with the runner (sandbox.StateRunner), which runs CODE as -c
// would, serves the chart helper, and, for a run that keeps state,
// restores and saves the state in stateDir.
//
// argv: work-dir alias memory cpu-seconds open-files file-size code [runner state-file-size]
//
// A stateful run's file-size limit is soft: its hard limit leaves room
// for the state, which may be larger than the disk limit, and the runner
// raises the soft one to it while it saves the state.
const launcher = `import os, resource, subprocess, sys
work, alias, mem, cpu, nofile, fsize, code = sys.argv[1:8]
runner = sys.argv[8:10]
fhard = int(runner.pop()) if len(runner) == 2 else int(fsize)
os.makedirs(work, exist_ok=True)
os.chdir(work)
here = os.getcwd()
if alias and not os.path.lexists(alias):
    try:
        os.makedirs(os.path.dirname(alias), exist_ok=True)
        os.symlink(here, alias)
    except OSError:
        try:
            subprocess.run(["sudo", "-n", "sh", "-c", 'mkdir -p "$(dirname "$1")" && ln -sfn "$2" "$1"', "sh", alias, here],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=5)
        except Exception:
            pass
for name, soft, hard in (("RLIMIT_DATA", int(mem), int(mem)), ("RLIMIT_CPU", int(cpu), int(cpu) + 1),
        ("RLIMIT_NOFILE", int(nofile), int(nofile)), ("RLIMIT_FSIZE", int(fsize), fhard)):
    try:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    except (ValueError, OSError):
        pass
os.execv(sys.executable, [sys.executable, "-c"] + runner + [code])
`

// stateDir is a stateful run's state directory in the VM, outside
// WorkDir (the collector never lists it); stateRel is it relative to
// WorkDir, where the program starts.
const (
	stateDir = vmHome + "/.sandpiper-state"
	stateRel = "../.sandpiper-state"
)

// stateSlack is the room a stateful run's files have beyond its state's
// limit, for the reports.
const stateSlack = 1 << 20

// stateRunner runs a stateful run's code.
var stateRunner = sandbox.StateRunner(stateRel)

func launcherArgs(work, alias string, lim sandbox.Limits, code string, keepState bool) []string {
	args := []string{"-c", launcher, work, alias,
		strconv.FormatInt(lim.Memory, 10),
		strconv.FormatInt(int64(max(lim.CPUTime.Seconds(), 1)), 10),
		strconv.Itoa(lim.OpenFiles),
		strconv.FormatInt(lim.DiskSize, 10),
		code}
	// Every run goes through the runner: it serves the chart helper, and
	// keeps state when the run has a state directory.
	fhard := lim.DiskSize
	if keepState {
		fhard = max(lim.DiskSize, lim.StateSize+stateSlack)
	}
	return append(args, stateRunner, strconv.FormatInt(fhard, 10))
}
