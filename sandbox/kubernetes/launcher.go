package kubernetes

import (
	"strconv"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// python is the interpreter of the sandbox's image, looked up in its PATH.
const python = "python3"

// launcher is the Python that starts the user's program in the pod, in
// sandboxd's root (sandbox.WorkDir): it sets the limits the pod does not
// give a run of its own (the pod's memory and CPU limits are the
// template's), runs CODE as its child through the runner
// (sandbox.StateRunner, which runs it as `python3 -c CODE` would and serves
// the chart helper; this backend keeps no state) and exits as a shell
// reports the child's end, 128+signal for a signal: sandboxd reports a
// process killed by a signal as -1, which would hide the CPU-time limit
// (SIGXCPU, 152) and the memory limit's kill (SIGKILL, 137).
//
// argv: memory cpu-seconds open-files file-size code runner
const launcher = `import os, resource, sys
mem, cpu, nofile, fsize = map(int, sys.argv[1:5])
code, runner = sys.argv[5:7]
pid = os.fork()
if pid == 0:
    try:
        for name, soft, hard in (("RLIMIT_DATA", mem, mem), ("RLIMIT_CPU", cpu, cpu + 1),
                ("RLIMIT_NOFILE", nofile, nofile), ("RLIMIT_FSIZE", fsize, fsize)):
            try:
                resource.setrlimit(getattr(resource, name), (soft, hard))
            except (ValueError, OSError):
                pass
        os.execv(sys.executable, [sys.executable, "-c", runner, code])
    finally:
        os._exit(127)
while True:
    try:
        _, status = os.waitpid(pid, 0)
        break
    except InterruptedError:
        pass
status = os.waitstatus_to_exitcode(status)
sys.exit(128 - status if status < 0 else status)
`

// launcherCommand is the command that runs code with lim in the pod. -I
// and -S keep the launcher's own start short and free of the pod's
// PYTHON* variables; the program gets them.
func launcherCommand(lim sandbox.Limits, code string) []string {
	return []string{python, "-I", "-S", "-c", launcher,
		strconv.FormatInt(lim.Memory, 10),
		strconv.FormatInt(int64(max(lim.CPUTime.Seconds(), 1)), 10),
		strconv.Itoa(lim.OpenFiles),
		strconv.FormatInt(lim.DiskSize, 10),
		code, runner}
}

// runner runs a run's code; its state directory never exists.
var runner = sandbox.StateRunner("/nonexistent/.sandpiper-state")

// programEnv is added to the pod's environment for the program.
var programEnv = map[string]string{
	"PYTHONUNBUFFERED":        "1", // output written before a timeout is kept
	"PYTHONDONTWRITEBYTECODE": "1",
	"MPLBACKEND":              "Agg",
}
