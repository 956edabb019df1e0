package vercel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// checkNames refuses input file names that could leave the working
// directory or are not plain relative paths.
func checkNames(files []sandbox.File) error {
	if len(files) > sandbox.DefaultInputFiles {
		return fmt.Errorf("sandbox: %d input files, at most %d", len(files), sandbox.DefaultInputFiles)
	}
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		n := f.Name
		if n == "" || strings.HasPrefix(n, "/") || path.Clean(n) != n || n == "." ||
			strings.HasPrefix(n, "../") || n == ".." || strings.ContainsRune(n, 0) || len(n) > 1024 {
			return fmt.Errorf("sandbox: input file name %q is not a clean relative path", n)
		}
		if seen[n] {
			return fmt.Errorf("sandbox: input file %q given twice", n)
		}
		seen[n] = true
	}
	return nil
}

// mergeLimits returns req's limits, with zero fields taken from def and then
// from the package defaults.
func mergeLimits(req, def sandbox.Limits) sandbox.Limits {
	def = def.WithDefaults()
	if req.Timeout <= 0 {
		req.Timeout = def.Timeout
	}
	if req.Memory <= 0 {
		req.Memory = def.Memory
	}
	if req.Processes <= 0 {
		req.Processes = def.Processes
	}
	if req.CPUTime <= 0 {
		req.CPUTime = def.CPUTime
	}
	if req.OpenFiles <= 0 {
		req.OpenFiles = def.OpenFiles
	}
	if req.DiskSize <= 0 {
		req.DiskSize = def.DiskSize
	}
	if req.Output <= 0 {
		req.Output = def.Output
	}
	if req.Files <= 0 {
		req.Files = def.Files
	}
	return req
}

// capBuffer keeps the first max bytes written and counts them all, so a
// program may print without bound while the bot's memory stays bounded.
type capBuffer struct {
	buf bytes.Buffer
	max int64
	n   int64
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if room := c.max - int64(c.buf.Len()); room > 0 {
		c.buf.Write(p[:min(int64(len(p)), room)])
	}
	c.n += int64(len(p))
	return len(p), nil
}

func (c *capBuffer) WriteString(s string) (int, error) {
	if room := c.max - int64(c.buf.Len()); room > 0 {
		c.buf.WriteString(s[:min(int64(len(s)), room)])
	}
	c.n += int64(len(s))
	return len(s), nil
}

func lastLine(b []byte) []byte {
	b = bytes.TrimRight(b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(bytes.TrimSpace(b), v) }
