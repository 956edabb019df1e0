package vercel

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// TestListingCaps leaves more in the working directory than the listing
// looks at: what comes back stays within the caps and says it was cut.
func TestListingCaps(t *testing.T) {
	f := newFake(t)
	s, _ := newTestSandbox(t, f, Config{})
	for _, tc := range []struct {
		name  string
		code  string
		check func(t *testing.T, res *sandbox.Result)
	}{
		{"fifo bomb", `import os
for level in range(3):
    os.mkdir(("d%02d" % level) * 50)
    os.chdir(("d%02d" % level) * 50)
    for i in range(4000):
        os.mkfifo("p%05d" % (level * 4000 + i) + "f" * 194)`, func(t *testing.T, res *sandbox.Result) {
			if n, partial := more(res); !partial || n < sandbox.MaxListed-sandbox.MaxOmitted-2 {
				t.Errorf("last entry %q, want the listing stopped and most entries counted", res.FilesOmitted[len(res.FilesOmitted)-1])
			}
		}},
		{"more files than kept", `for i in range(600):
    open("f%04d" % i, "w").write(str(i))`, func(t *testing.T, res *sandbox.Result) {
			if len(res.Files) != sandbox.DefaultFileCount || res.Files[0].Name != "f0000" || res.Files[len(res.Files)-1].Name != "f0063" {
				t.Errorf("%d files, want f0000 to f0063", len(res.Files))
			}
			if n, partial := more(res); n != 600-64-sandbox.MaxOmitted || partial {
				t.Errorf("last entry %q, want %d more", res.FilesOmitted[len(res.FilesOmitted)-1], 600-64-sandbox.MaxOmitted)
			}
		}},
		{"long names", `import os
d = "n" * 250
for level in range(6):
    os.mkdir(d)
    os.chdir(d)
    open("x" * 250, "w").close()`, func(t *testing.T, res *sandbox.Result) {
			if !slices.ContainsFunc(res.FilesOmitted, func(e string) bool { return strings.HasSuffix(e, "… (path too long; not looked into)") }) {
				t.Errorf("no directory omitted for its path's length: %q", res.FilesOmitted)
			}
		}},
		{"deep tree", `import os
for level in range(40):
    os.mkdir("d")
    os.chdir("d")`, func(t *testing.T, res *sandbox.Result) {
			if deep := strings.Repeat("d/", sandbox.MaxDepth) + "d (too deep)"; !slices.Contains(res.FilesOmitted, deep) {
				t.Errorf("no %q in %q", deep, res.FilesOmitted)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Run(t.Context(), sandbox.Request{Code: tc.code, Limits: sandbox.Limits{Timeout: time.Minute}})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.ExitCode != 0 {
				t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
			}
			checkCapped(t, res)
			tc.check(t, res)
		})
	}
}

// TestHostileManifest has the collector report what a program that owns
// the VM could make it report: bad names, more files than the limit, an
// omitted list without end, a listing past its size. The host reads no
// file by a bad name, and returns a bounded result.
func TestHostileManifest(t *testing.T) {
	var files []map[string]any
	for _, name := range []string{"../../../etc/passwd", "/etc/shadow", "a/../../b", ""} {
		files = append(files, map[string]any{"name": name, "size": 1})
	}
	for i := range 500 {
		files = append(files, map[string]any{"name": "f" + strings.Repeat("x", i%300), "size": 1})
	}
	for _, tc := range []struct {
		name    string
		omitted int // entries of 421 bytes, 921 as JSON
		err     bool
	}{
		{"long lists", 2000, false},
		{"past the listing's size", 5000, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			s, _ := newTestSandbox(t, f, Config{})
			manifest, _ := json.Marshal(map[string]any{"files": files,
				"omitted": slices.Repeat([]string{strings.Repeat("\x1b[2J", 100) + " (not a regular file)"}, tc.omitted), "unlisted": -7})
			path := filepath.Join(t.TempDir(), "manifest.json")
			if err := os.WriteFile(path, manifest, 0o644); err != nil {
				t.Fatal(err)
			}
			f.setHook(func(w http.ResponseWriter, r *http.Request, op string, n int) bool {
				if op == "cmd" && n == 2 { // the collector: print the manifest instead
					body, _ := io.ReadAll(r.Body)
					var req commandRequest
					json.Unmarshal(body, &req)
					req.Args = []string{"-c", "import sys; sys.stdout.write(open(sys.argv[1]).read())", path}
					body, _ = json.Marshal(req)
					r.Body = io.NopCloser(bytes.NewReader(body))
				}
				return false
			})
			res, err := s.Run(t.Context(), sandbox.Request{Code: "open('f', 'w').write('ok')"})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			for _, rq := range f.requests("read") {
				if strings.Contains(rq.Path+string(rq.Body), "etc") {
					t.Errorf("read a file by a bad name: %s %s", rq.Path, rq.Body)
				}
			}
			if reads := len(f.requests("read")); reads > sandbox.DefaultFileCount {
				t.Errorf("%d files read, want at most %d", reads, sandbox.DefaultFileCount)
			}
			if last := res.FilesOmitted[len(res.FilesOmitted)-1]; tc.err != strings.Contains(last, "could not be read") {
				t.Errorf("last omitted entry %q", last)
			}
			checkCapped(t, res)
		})
	}
}

// checkCapped checks that res's listing is within the caps and says it
// was cut.
func checkCapped(t *testing.T, res *sandbox.Result) {
	t.Helper()
	if !slices.Contains(res.Caps, sandbox.CapResultList) {
		t.Errorf("caps %q, want %q", res.Caps, sandbox.CapResultList)
	}
	if len(res.Files) > sandbox.DefaultFileCount {
		t.Errorf("%d files", len(res.Files))
	}
	for _, f := range res.Files {
		if !sandbox.ValidName(f.Name) {
			t.Errorf("file %q", f.Name)
		}
	}
	if len(res.FilesOmitted) == 0 || len(res.FilesOmitted) > sandbox.MaxOmitted+1 {
		t.Fatalf("%d omitted entries, want 1 to %d", len(res.FilesOmitted), sandbox.MaxOmitted+1)
	}
	size := 0
	for _, e := range res.FilesOmitted[:len(res.FilesOmitted)-1] {
		size += len(e)
		if len(e) > sandbox.MaxOmittedName+sandbox.MaxOmittedWhy+3 {
			t.Errorf("omitted entry of %d bytes", len(e))
		}
	}
	if size > sandbox.MaxOmittedBytes {
		t.Errorf("omitted entries of %d bytes", size)
	}
	t.Logf("%d files; %d omitted entries of %d bytes, the last %q", len(res.Files), len(res.FilesOmitted), size, res.FilesOmitted[len(res.FilesOmitted)-1])
}

// more reads the last omitted entry, which says how many more were left
// out and whether others were not looked at.
func more(res *sandbox.Result) (n int64, partial bool) {
	n, partial, ok := sandbox.ParseMoreOmitted(res.FilesOmitted[len(res.FilesOmitted)-1])
	if !ok {
		return -1, false
	}
	return n, partial
}
