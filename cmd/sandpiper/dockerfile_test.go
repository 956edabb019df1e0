package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/cmd/sandpiper/internal/config"
)

// The Dockerfile cannot be built here (no Docker engine), so this test
// lints what it refers to: the files it copies, the binary the build
// stage makes and the runtime stage runs, the subcommands it calls, the
// user it runs as, the pinned Python modules, and the variables it sets.

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line  int
	cmd   string // upper case
	args  string
	stage int // index of the FROM it follows
}

func parseDockerfile(t testing.TB, path string) []instruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	start, stage := 0, -1
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasPrefix(line, "#") { // a comment inside a continued instruction
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(cont + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		out = append(out, instruction{line: start, cmd: cmd, args: strings.Join(strings.Fields(args), " "), stage: stage})
		cur.Reset()
	}
	if cur.Len() > 0 {
		t.Fatalf("%s: the last instruction ends with a line continuation", path)
	}
	return out
}

// execForm decodes a JSON array argument (ENTRYPOINT, CMD, VOLUME …).
func execForm(t testing.TB, in instruction) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(in.args), &v); err != nil || len(v) == 0 {
		t.Errorf("line %d: %s %s: want the exec (JSON array) form", in.line, in.cmd, in.args)
	}
	return v
}

// flagValue reads --name=value or --name value from args.
func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v
		}
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

func TestDockerfile(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	lintDockerfile(t, repo, filepath.Join(repo, "Dockerfile"))
}

// lintDockerfile reports, through t, what is wrong with the Dockerfile at
// path for the build context repo.
func lintDockerfile(t testing.TB, repo, path string) {
	t.Helper()
	ins := parseDockerfile(t, path)
	var froms []instruction
	for _, in := range ins {
		if in.cmd == "FROM" {
			froms = append(froms, in)
		}
	}
	if len(froms) < 2 {
		t.Fatalf("%d stages, want a multi-stage build", len(froms))
	}
	last := len(froms) - 1
	stageOf := func(cmd string, stage int) []instruction {
		var out []instruction
		for _, in := range ins {
			if in.cmd == cmd && in.stage == stage {
				out = append(out, in)
			}
		}
		return out
	}

	// The build stage uses the Go of go.mod; the runtime stage is the
	// official Python 3.13 slim image.
	gomod, _ := os.ReadFile(filepath.Join(repo, "go.mod"))
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	build := strings.Fields(froms[0].args)
	if goVersion == nil || !strings.HasPrefix(build[0], "golang:"+string(goVersion[1])) || len(build) != 3 || !strings.EqualFold(build[1], "AS") {
		t.Errorf("build stage FROM %s: want golang:%s… AS name (go.mod says go %s)", froms[0].args, goVersion[1], goVersion[1])
	}
	buildStage := build[len(build)-1]
	runtime := strings.Fields(froms[last].args)[0]
	if !regexp.MustCompile(`^python:3\.13(\.\d+)?-slim(-[a-z]+)?$`).MatchString(runtime) {
		t.Errorf("runtime stage FROM %s: want the official python:3.13-slim image", runtime)
	}
	if distro := strings.TrimPrefix(build[0], "golang:"+string(goVersion[1])); strings.HasPrefix(distro, "-") && !strings.HasSuffix(runtime, distro) {
		t.Errorf("build stage %s and runtime %s are on different Debian releases; cgo links against the build's glibc", build[0], runtime)
	}

	// COPY sources exist in the build context and are not ignored.
	ignore, _ := os.ReadFile(filepath.Join(repo, ".dockerignore"))
	for _, in := range ins {
		if in.cmd != "COPY" && in.cmd != "ADD" {
			continue
		}
		args := strings.Fields(in.args)
		if flagValue(args, "--from") != "" {
			continue
		}
		var srcs []string
		for _, a := range args[:len(args)-1] {
			if !strings.HasPrefix(a, "--") {
				srcs = append(srcs, a)
			}
		}
		for _, src := range srcs {
			if _, err := os.Stat(filepath.Join(repo, src)); err != nil {
				t.Errorf("line %d: COPY %s: %v", in.line, src, err)
			}
			for _, pat := range strings.Fields(string(ignore)) {
				if !strings.HasPrefix(pat, "#") && src != "." && strings.Trim(pat, "/") == strings.Trim(src, "/") {
					t.Errorf("line %d: COPY %s, which .dockerignore leaves out", in.line, src)
				}
			}
		}
	}
	if !slices.Contains(strings.Fields(string(ignore)), ".git") {
		t.Error(".dockerignore should leave out .git")
	}

	// The build stage builds this command and sandpiper-exec, in one go
	// build (one build: sandpiper hands exec over only to a sandpiper-exec
	// of its own build), into a directory; the runtime stage copies both
	// from there into one directory (sandpiper looks for sandpiper-exec
	// beside itself), and runs sandpiper.
	var outDir string
	for _, in := range stageOf("RUN", 0) {
		if !strings.Contains(in.args, "go build") {
			continue
		}
		args := strings.Fields(in.args)
		outDir = flagValue(args, "-o")
		for _, pkg := range []string{"./cmd/sandpiper", "./cmd/sandpiper/sandpiper-exec"} {
			if !slices.Contains(args, pkg) {
				t.Errorf("line %d: go build does not build %s", in.line, pkg)
			}
		}
		if !strings.HasSuffix(outDir, "/") {
			t.Errorf("line %d: go build -o %s: want a directory (DIR/) for the two binaries", in.line, outDir)
		}
		if !strings.Contains(in.args, "CGO_ENABLED=1") {
			t.Errorf("line %d: the local sandbox's C helpers need CGO_ENABLED=1", in.line)
		}
	}
	if outDir == "" {
		t.Fatal("the build stage has no go build -o DIR/")
	}
	copied := map[string]string{} // binary → where it is installed
	for _, in := range stageOf("COPY", last) {
		args := strings.Fields(in.args)
		from := flagValue(args, "--from")
		if from == "" {
			continue
		}
		if from != buildStage {
			t.Errorf("line %d: COPY --from=%s, but the build stage is %s", in.line, from, buildStage)
		}
		dst := args[len(args)-1]
		for _, src := range args[:len(args)-1] {
			if strings.HasPrefix(src, "--") {
				continue
			}
			name, ok := strings.CutPrefix(src, outDir)
			if !ok || (name != "sandpiper" && name != "sandpiper-exec") {
				t.Errorf("line %d: copies %s, which the build stage does not write", in.line, src)
				continue
			}
			if strings.HasSuffix(dst, "/") {
				copied[name] = dst + name
			} else {
				copied[name] = dst
			}
		}
	}
	installed := copied["sandpiper"]
	if lean := copied["sandpiper-exec"]; installed == "" || lean != filepath.Join(filepath.Dir(installed), "sandpiper-exec") {
		t.Errorf("sandpiper-exec is installed at %q, not beside sandpiper (%q): exec would start slowly", lean, installed)
	}
	entry := stageOf("ENTRYPOINT", last)
	if len(entry) != 1 {
		t.Fatalf("%d ENTRYPOINTs in the runtime stage, want 1", len(entry))
	}
	if ep := execForm(t, entry[0]); len(ep) == 0 || ep[0] != installed {
		t.Errorf("ENTRYPOINT %v does not run the copied binary %s", ep, installed)
	}
	for _, in := range stageOf("CMD", last) {
		for _, sub := range execForm(t, in) {
			if !strings.Contains(usage, "sandpiper "+sub+" ") && !strings.Contains(usage, "sandpiper ["+sub+"]") {
				t.Errorf("CMD %s is not a sandpiper subcommand", sub)
			}
		}
	}
	hc := stageOf("HEALTHCHECK", last)
	if len(hc) != 1 {
		t.Fatalf("%d HEALTHCHECKs in the runtime stage, want 1", len(hc))
	}
	_, hcCmd, ok := strings.Cut(hc[0].args, "CMD ")
	var probe []string
	if !ok || json.Unmarshal([]byte(hcCmd), &probe) != nil || len(probe) < 2 || probe[0] != installed || probe[1] != "healthcheck" {
		t.Errorf("HEALTHCHECK %s: want CMD [%q, \"healthcheck\"] (the slim image has no curl)", hc[0].args, installed)
	}

	// It runs as a user it creates, not root.
	users := stageOf("USER", last)
	if len(users) == 0 {
		t.Fatal("the runtime stage has no USER: it would run as root")
	}
	user := strings.Fields(users[len(users)-1].args)[0]
	if user == "root" || user == "0" || strings.HasPrefix(user, "0:") {
		t.Errorf("USER %s is root", user)
	}
	created := false
	for _, in := range stageOf("RUN", last) {
		if regexp.MustCompile(`\b(useradd|adduser)\b.*\b` + regexp.QuoteMeta(user) + `(\s|$)`).MatchString(in.args) {
			created = true
		}
	}
	if !created {
		t.Errorf("USER %s is never created (useradd/adduser) in the runtime stage", user)
	}

	// The scientific stack is there, every module pinned to a version.
	want := map[string]bool{"numpy": false, "pandas": false, "matplotlib": false, "scipy": false, "sympy": false, "openpyxl": false}
	pinned := regexp.MustCompile(`^[A-Za-z0-9_.-]+==\d+(\.\d+)+$`)
	for _, in := range stageOf("RUN", last) {
		cmd, _, _ := strings.Cut(in.args, "&&")
		if !strings.Contains(cmd, "pip install") {
			continue
		}
		for _, a := range strings.Fields(strings.SplitN(cmd, "pip install", 2)[1]) {
			if strings.HasPrefix(a, "-") {
				continue
			}
			if !pinned.MatchString(a) {
				t.Errorf("line %d: %s is not pinned to an exact version (name==X.Y.Z)", in.line, a)
				continue
			}
			name, _, _ := strings.Cut(a, "==")
			if _, ok := want[strings.ToLower(name)]; ok {
				want[strings.ToLower(name)] = true
			}
		}
	}
	for name, ok := range want {
		if !ok {
			t.Errorf("the runtime stage does not pip install %s", name)
		}
	}
	for _, m := range config.DataModules {
		if _, ok := want[m]; !ok {
			t.Errorf("sandpiper doctor expects %s, which the image does not install", m)
		}
	}

	// The variables it sets are ones the bot reads, and fit the image.
	var src []byte // the sandbox's settings, and each backend's
	for _, f := range []string{"internal/config/sandbox.go", "internal/config/backends.go", "backend.go"} {
		b, _ := os.ReadFile(f)
		src = append(src, b...)
	}
	botSrc, _ := os.ReadFile("internal/config/botconfig/bot.go")
	env := map[string]string{}
	for _, in := range stageOf("ENV", last) {
		for _, kv := range strings.Fields(in.args) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
			if !bytes.Contains(src, []byte(`"`+k)) && !bytes.Contains(botSrc, []byte(`"`+k)) {
				t.Errorf("ENV %s is not a variable sandpiper reads", k)
			}
		}
	}
	if env["SANDPIPER_PYTHON"] != "/usr/local/bin/python3" {
		t.Errorf("SANDPIPER_PYTHON=%q, want the image's /usr/local/bin/python3", env["SANDPIPER_PYTHON"])
	}
	var volumes, exposed []string
	for _, in := range stageOf("VOLUME", last) {
		volumes = append(volumes, execForm(t, in)...)
	}
	for _, in := range stageOf("EXPOSE", last) {
		exposed = append(exposed, strings.Fields(in.args)...)
	}
	if dir := env["SANDPIPER_DATA_DIR"]; dir == "" || !slices.Contains(volumes, dir) {
		t.Errorf("SANDPIPER_DATA_DIR=%q is not a VOLUME (%v): settings and workspaces would be lost", dir, volumes)
	}
	if _, port, _ := strings.Cut(env["SANDPIPER_HTTP_ADDR"], ":"); port == "" || !slices.Contains(exposed, port) {
		t.Errorf("SANDPIPER_HTTP_ADDR=%q is not EXPOSEd (%v)", env["SANDPIPER_HTTP_ADDR"], exposed)
	}
}

// TestDockerfileLintFails breaks the Dockerfile in the ways that matter
// and makes sure the linter notices each.
func TestDockerfileLintFails(t *testing.T) {
	repo, _ := filepath.Abs("../..")
	good, err := os.ReadFile(filepath.Join(repo, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ old, new, want string }{
		{"COPY --from=build /out/sandpiper ", "COPY --from=build /out/sandpiper-bot ", "copies /out/sandpiper-bot, which the build stage does not write"},
		{"/out/sandpiper-exec /usr/local/bin/", "/usr/local/bin/", "sandpiper-exec is installed at \"\", not beside sandpiper"},
		{" ./cmd/sandpiper/sandpiper-exec", "", "go build does not build ./cmd/sandpiper/sandpiper-exec"},
		{"-o /out/ ", "-o /out/sandpiper ", "want a directory (DIR/) for the two binaries"},
		{`ENTRYPOINT ["/usr/local/bin/sandpiper"]`, `ENTRYPOINT ["/usr/bin/sandpiper"]`, "does not run the copied binary"},
		{`CMD ["/usr/local/bin/sandpiper", "healthcheck"]`, `CMD curl -f http://localhost:8080/healthz`, "the slim image has no curl"},
		{"USER sandpiper", "USER root", "USER root is root"},
		{"USER sandpiper", "USER nobody2", "USER nobody2 is never created"},
		{"numpy==2.5.5", "numpy", "numpy is not pinned"},
		{"numpy==2.5.5", "numpy>=2", "numpy>=2 is not pinned"},
		{"        openpyxl==3.1.5 \\\n", "", "does not pip install openpyxl"},
		{"COPY go.mod go.sum ./", "COPY go.mod go.sum requirements.txt ./", "COPY requirements.txt"},
		{"FROM python:3.13-slim-bookworm", "FROM python:3.12-slim-bookworm", "want the official python:3.13-slim image"},
		{"FROM python:3.13-slim-bookworm", "FROM python:3.13-slim-trixie", "different Debian releases"},
		{"CGO_ENABLED=1 ", "CGO_ENABLED=0 ", "need CGO_ENABLED=1"},
		{`VOLUME ["/data"]`, `VOLUME ["/var/lib/sandpiper"]`, "is not a VOLUME"},
		{"SANDPIPER_DATA_DIR=/data", "SANDPIPER_DATADIR=/data", "ENV SANDPIPER_DATADIR is not a variable sandpiper reads"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			bad := strings.Replace(string(good), tt.old, tt.new, 1)
			if bad == string(good) {
				t.Fatalf("the Dockerfile has no %q to break", tt.old)
			}
			path := filepath.Join(t.TempDir(), "Dockerfile")
			os.WriteFile(path, []byte(bad), 0o644)
			r := &recorder{TB: t}
			func() {
				defer func() {
					if v := recover(); v != nil && v != r {
						panic(v)
					}
				}()
				lintDockerfile(r, repo, path)
			}()
			if !slices.ContainsFunc(r.errs, func(e string) bool { return strings.Contains(e, tt.want) }) {
				t.Errorf("the linter did not say %q; it said:\n%s", tt.want, strings.Join(r.errs, "\n"))
			}
		})
	}
}

// recorder collects a lint's errors instead of failing the test.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, a ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
}
func (r *recorder) Fatalf(format string, a ...any) { r.Errorf(format, a...); panic(r) }
func (r *recorder) Fatal(a ...any)                 { r.Errorf("%s", fmt.Sprint(a...)); panic(r) }
func (r *recorder) Error(a ...any)                 { r.Errorf("%s", fmt.Sprint(a...)) }

func TestDockerfileParse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "Dockerfile")
	os.WriteFile(path, []byte("FROM a AS b\n# c\nRUN x \\\n  # inside\n  y\nFROM d\nCMD [\"e\"]\n"), 0o644)
	ins := parseDockerfile(t, path)
	if len(ins) != 4 || ins[1].args != "x y" || ins[1].line != 3 || ins[3].stage != 1 || ins[3].cmd != "CMD" {
		t.Errorf("parsed %+v", ins)
	}
}
