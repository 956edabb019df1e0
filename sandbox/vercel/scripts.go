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
// itself with `python3 -c CODE`.
//
// argv: work-dir alias memory cpu-seconds open-files file-size code
const launcher = `import os, resource, subprocess, sys
work, alias, mem, cpu, nofile, fsize, code = sys.argv[1:8]
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
os.execv(sys.executable, [sys.executable, "-c", code])
`

// collector lists the files the program created or changed in the working
// directory, within the count and size limits, as JSON on stdout:
// {"files": [{"name", "size"}], "omitted": ["name (why)"]}. It never
// follows symbolic links. Inputs that are unchanged (same SHA-256) are not
// listed.
//
// argv: work-dir max-files max-bytes inputs-json ({name: sha256})
const collector = `import hashlib, json, os, stat, sys
work, max_files, budget, inputs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
names, omitted = [], []
for root, dirs, files in os.walk(work, followlinks=False):
    for d in list(dirs):
        if os.path.islink(os.path.join(root, d)):
            dirs.remove(d)
            files.append(d)
    for f in files:
        p = os.path.join(root, f)
        rel = os.path.relpath(p, work).replace(os.sep, "/")
        try:
            st = os.lstat(p)
        except OSError as e:
            omitted.append(rel + " (" + (e.strerror or str(e)) + ")")
            continue
        if stat.S_ISREG(st.st_mode):
            names.append((rel, st.st_size, p))
        else:
            omitted.append(rel + " (not a regular file)")
names.sort()
out = []
for rel, size, p in names:
    if rel in inputs:
        try:
            with open(p, "rb") as fh:
                if hashlib.sha256(fh.read()).hexdigest() == inputs[rel]:
                    continue
        except OSError:
            pass
    if size > budget:
        omitted.append(rel + " (too large)")
        continue
    if len(out) >= max_files:
        omitted.append(rel + " (too many files)")
        continue
    budget -= size
    out.append({"name": rel, "size": size})
json.dump({"files": out, "omitted": omitted}, sys.stdout)
`

// manifest is the collector's output.
type manifest struct {
	Files []struct {
		Name string `json:"name"`
		Size int64  `json:"size"`
	} `json:"files"`
	Omitted []string `json:"omitted"`
}

func launcherArgs(work, alias string, lim sandbox.Limits, code string) []string {
	return []string{"-c", launcher, work, alias,
		strconv.FormatInt(lim.Memory, 10),
		strconv.FormatInt(int64(max(lim.CPUTime.Seconds(), 1)), 10),
		strconv.Itoa(lim.OpenFiles),
		strconv.FormatInt(lim.DiskSize, 10),
		code}
}

func collectorArgs(work string, lim sandbox.Limits, inputs []sandbox.File) []string {
	sums := make(map[string]string, len(inputs))
	for _, f := range inputs {
		h := sha256.Sum256(f.Data)
		sums[f.Name] = hex.EncodeToString(h[:])
	}
	b, _ := json.Marshal(sums)
	return []string{"-c", collector, work, strconv.Itoa(lim.Files), strconv.FormatInt(lim.DiskSize, 10), string(b)}
}
