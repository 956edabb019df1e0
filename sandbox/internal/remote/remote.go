// Package remote holds what the backends that run a program on another
// machine share (a Vercel VM, a Kubernetes pod): the Python that lists, in
// one command there, the files the program left in its working directory,
// and the reading of that list into a [sandbox.Result]'s files within the
// limits and the caps every backend keeps to.
package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Collector lists the files the program created or changed in the working
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
const Collector = `import hashlib, json, os, stat, sys
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

// manifest is the Collector's output.
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

// MaxManifest bounds the Collector's output, in bytes: run it with its
// stdout in a [sandbox.CapBuffer] of this size.
const MaxManifest = 4 << 20

// Errors a [ReadFile] returns.
var (
	ErrNotFound = errors.New("no such file")
	ErrTooBig   = errors.New("too large")
)

// ReadFile reads the file name (relative to the working directory) from
// the machine the program ran on, at most max bytes: a larger file is
// ErrTooBig, a missing one ErrNotFound.
type ReadFile func(ctx context.Context, name string, max int64) ([]byte, error)

// Files reads the Collector's listing (its stdout, exit code and stderr)
// and then, through read, the files it lists, within lim's count and
// size. What the listing says comes from the machine the program ran on,
// so it is checked before any file is read (names, count). omitted names
// the files left out and why; capped reports whether the listing was cut.
// An error means no listing could be had, or a read failed: files holds
// what was read before.
func Files(ctx context.Context, out *sandbox.CapBuffer, code int, stderr []byte, lim sandbox.Limits, read ReadFile) (files []sandbox.File, omitted []string, capped bool, err error) {
	if out.Truncated() {
		return nil, nil, true, fmt.Errorf("the listing of the files passed %d bytes", MaxManifest)
	}
	if code != 0 {
		return nil, nil, false, fmt.Errorf("listing the files failed (exit %d): %s", code, clip(string(LastLine(stderr)), 200))
	}
	var m manifest
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &m); err != nil {
		return nil, nil, false, fmt.Errorf("listing the files: %w", err)
	}
	omitted = m.Omitted
	if m.Unlisted > 0 || m.Stopped {
		omitted = append(omitted, sandbox.MoreOmitted(m.Unlisted, m.Stopped || m.Skipped))
	}
	capped = m.Cut || m.Unlisted > 0 || m.Stopped
	budget, reads := lim.DiskSize, 0
	for _, f := range m.Files {
		switch {
		case !sandbox.ValidName(f.Name):
			omitted = append(omitted, f.Name+" (not a clean relative path)")
			continue
		case reads >= lim.Files: // the collector lists no more
			omitted = append(omitted, f.Name+" (too many files)")
			continue
		}
		reads++
		data, err := read(ctx, f.Name, budget)
		switch {
		case errors.Is(err, ErrNotFound):
			omitted = append(omitted, f.Name+" (removed while being read)")
			continue
		case errors.Is(err, ErrTooBig):
			omitted = append(omitted, f.Name+" (too large)")
			continue
		case err != nil:
			return files, omitted, capped, err
		}
		budget -= int64(len(data))
		files = append(files, sandbox.File{Name: f.Name, Data: data})
	}
	return files, omitted, capped, nil
}

// Attach puts a run's output files into res as [Files] gave them (files,
// omitted, capped), and bounds res by lim. When they could not be had
// (err), the program's output is kept and an entry of FilesOmitted says
// that the files are missing, and why.
func Attach(res *sandbox.Result, lim sandbox.Limits, files []sandbox.File, omitted []string, capped bool, err error) {
	if err != nil {
		omitted = append(omitted, fmt.Sprintf("%s (output files could not be read: %v)", sandbox.WorkDir, err))
	}
	res.Files, res.FilesOmitted = files, omitted
	if capped {
		res.AddCap(sandbox.CapResultList)
	}
	res.Bound(lim)
}

// CollectorArgs are python3's arguments that run [Collector] over the
// directory work (absolute, or relative to the command's working
// directory), for a run with limits lim and input files inputs.
func CollectorArgs(work string, lim sandbox.Limits, inputs []sandbox.File) []string {
	sums := make(map[string]string, len(inputs))
	for _, f := range inputs {
		h := sha256.Sum256(f.Data)
		sums[f.Name] = hex.EncodeToString(h[:])
	}
	b, _ := json.Marshal(sums)
	// -I: nothing the program left in the VM (a json.py in the working
	// directory, PYTHON* variables, a user site) runs in the collector.
	return []string{"-I", "-c", Collector, work, strconv.Itoa(lim.Files), strconv.FormatInt(lim.DiskSize, 10), string(b),
		strconv.Itoa(sandbox.MaxListed), strconv.Itoa(sandbox.MaxDepth), strconv.Itoa(sandbox.Candidates(lim, len(inputs))),
		strconv.Itoa(sandbox.MaxPathLen), strconv.Itoa(sandbox.MaxOmitted), strconv.Itoa(sandbox.MaxOmittedBytes),
		strconv.Itoa(sandbox.MaxOmittedName)}
}

// LastLine returns the last line of b, without its newline.
func LastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
