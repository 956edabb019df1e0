package vercel

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// launcher is the Python that starts the user's program inside the VM:
// it makes and enters the working directory, links sandbox.WorkDir to it
// where it can (so absolute /mnt/data paths work as with the local
// backend), sets the limits the VM itself does not give, then replaces
// itself with `python3 -c CODE`, or, for a run that keeps state, with the
// runner (sandbox.StateRunner), which runs CODE as -c would and restores
// and saves the state in stateDir.
//
// argv: work-dir alias memory cpu-seconds open-files file-size code [runner]
const launcher = `import os, resource, subprocess, sys
work, alias, mem, cpu, nofile, fsize, code = sys.argv[1:8]
runner = sys.argv[8:9]
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
        ("RLIMIT_NOFILE", int(nofile), int(nofile)), ("RLIMIT_FSIZE", int(fsize), int(fsize))):
    try:
        resource.setrlimit(getattr(resource, name), (soft, hard))
    except (ValueError, OSError):
        pass
os.execv(sys.executable, [sys.executable, "-c"] + runner + [code])
`

// collector lists the files the program created or changed in the working
// directory, within the count and size limits and the caps on the listing
// (sandbox.Max*), as JSON on stdout: {"files": [{"name", "size"}],
// "omitted": ["name (why)"], "unlisted": n, "stopped": bool, "skipped": bool,
// "cut": bool}.
// It looks at max-entries directory entries at most, max-depth levels deep,
// keeps the first max-names regular files in lexical order to choose from,
// omits paths longer than path-max bytes, and lists at most max-omitted
// entries of omit-bytes in all, each name cut to omit-name bytes; unlisted
// counts what the caps left out, stopped says the walk stopped early,
// skipped that a directory was not looked into, and cut that a cap fired. It never follows symbolic links. Inputs that are
// unchanged (same SHA-256) are not listed.
//
// argv: work-dir max-files max-bytes inputs-json ({name: sha256})
// max-entries max-depth max-names path-max max-omitted omit-bytes omit-name
const collector = `import hashlib, json, os, stat, sys
work, max_files, budget, inputs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
max_entries, max_depth, max_names, path_max, max_omitted, omit_bytes, omit_name = map(int, sys.argv[5:12])
names, omitted = [], []
entries = unlisted = omit_used = 0
stopped = skipped = full = cut = False

def size(s):
    return len(s.encode("utf-8", "surrogateescape"))

def cut_name(s):
    global cut
    b = s.encode("utf-8", "surrogateescape")
    if len(b) <= omit_name:
        return s
    cut = True
    k = omit_name - 3
    i = 0
    while i < 3 and k > 0 and b[k] & 0xC0 == 0x80:
        k, i = k - 1, i + 1
    return b[:k].decode("utf-8", "surrogateescape") + "\u2026"

def omit(rel, why):
    global unlisted, omit_used, full, cut
    if not full and len(omitted) < max_omitted:
        e = cut_name(rel) + " (" + why + ")"
        if omit_used + size(e) <= omit_bytes:
            omitted.append(e)
            omit_used += size(e)
            return
    full = cut = True
    unlisted += 1

def keep(rel, st_size):
    global unlisted, cut
    names.append((rel, st_size))
    if len(names) > 2 * max_names:
        names.sort()
        unlisted += len(names) - max_names
        cut = True
        del names[max_names:]

stack = [("", 0)]
while stack and not stopped:
    rel, depth = stack.pop()
    try:
        it = os.scandir(os.path.join(work, rel))
    except OSError as e:
        omit(rel or ".", e.strerror or str(e))
        continue
    with it:
        for e in it:
            if entries >= max_entries:
                stopped = cut = True
                break
            entries += 1
            p = rel + "/" + e.name if rel else e.name
            try:
                st = e.stat(follow_symlinks=False)
            except OSError as err:
                omit(p, err.strerror or str(err))
                continue
            if stat.S_ISDIR(st.st_mode):
                if size(p) > path_max:
                    cut = skipped = True
                    omit(p, "path too long; not looked into")
                elif depth >= max_depth:
                    cut = skipped = True
                    omit(p, "too deep")
                else:
                    stack.append((p, depth + 1))
            elif stat.S_ISREG(st.st_mode):
                if size(p) > path_max:
                    cut = True
                    omit(p, "path too long")
                else:
                    keep(p, st.st_size)
            else:
                omit(p, "not a regular file")
names.sort()
if len(names) > max_names:
    unlisted += len(names) - max_names
    cut = True
    del names[max_names:]
out = []
for rel, st_size in names:
    if rel in inputs:
        try:
            with open(os.path.join(work, rel), "rb") as fh:
                if hashlib.sha256(fh.read()).hexdigest() == inputs[rel]:
                    continue
        except OSError:
            pass
    if st_size > budget:
        omit(rel, "too large")
        continue
    if len(out) >= max_files:
        omit(rel, "too many files")
        continue
    budget -= st_size
    out.append({"name": rel, "size": st_size})
json.dump({"files": out, "omitted": omitted, "unlisted": unlisted, "stopped": stopped, "skipped": skipped, "cut": cut}, sys.stdout)
`

// manifest is the collector's output.
type manifest struct {
	Files []struct {
		Name string `json:"name"`
		Size int64  `json:"size"`
	} `json:"files"`
	Omitted  []string `json:"omitted"`
	Unlisted int64    `json:"unlisted"`
	Stopped  bool     `json:"stopped"`
	Skipped  bool     `json:"skipped"`
	Cut      bool     `json:"cut"`
}

// stateDir is a stateful run's state directory in the VM, outside
// WorkDir (the collector never lists it); stateRel is it relative to
// WorkDir, where the program starts.
const (
	stateDir = vmHome + "/.sandpiper-state"
	stateRel = "../.sandpiper-state"
)

// stateRunner runs a stateful run's code.
var stateRunner = sandbox.StateRunner(stateRel)

func launcherArgs(work, alias string, lim sandbox.Limits, code string, keepState bool) []string {
	args := []string{"-c", launcher, work, alias,
		strconv.FormatInt(lim.Memory, 10),
		strconv.FormatInt(int64(max(lim.CPUTime.Seconds(), 1)), 10),
		strconv.Itoa(lim.OpenFiles),
		strconv.FormatInt(lim.DiskSize, 10),
		code}
	if keepState {
		args = append(args, stateRunner)
	}
	return args
}

func collectorArgs(work string, lim sandbox.Limits, inputs []sandbox.File) []string {
	sums := make(map[string]string, len(inputs))
	for _, f := range inputs {
		h := sha256.Sum256(f.Data)
		sums[f.Name] = hex.EncodeToString(h[:])
	}
	b, _ := json.Marshal(sums)
	// -I: nothing the program left in the VM (a json.py in the working
	// directory, PYTHON* variables, a user site) runs in the collector.
	return []string{"-I", "-c", collector, work, strconv.Itoa(lim.Files), strconv.FormatInt(lim.DiskSize, 10), string(b),
		strconv.Itoa(sandbox.MaxListed), strconv.Itoa(sandbox.MaxDepth), strconv.Itoa(sandbox.Candidates(lim, len(inputs))),
		strconv.Itoa(sandbox.MaxPathLen), strconv.Itoa(sandbox.MaxOmitted), strconv.Itoa(sandbox.MaxOmittedBytes),
		strconv.Itoa(sandbox.MaxOmittedName)}
}
