package chat

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandpiper-bot/sandpiper/agent"
	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// ReadFiles reads the files given with --file, within the limits, under names
// safe for /mnt/data (unique: a second data.csv becomes data-2.csv).
func ReadFiles(paths []string, lim sandbox.FileLimits) ([]agent.InputFile, error) {
	lim = lim.WithDefaults()
	if len(paths) > lim.RunFiles {
		return nil, fmt.Errorf("%d files given; a run takes at most %d (SANDPIPER_FILES_MAX_COUNT)", len(paths), lim.RunFiles)
	}
	var out []agent.InputFile
	var total int64
	taken := map[string]bool{}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("--file %s: not a regular file", p)
		}
		if fi.Size() > lim.FileSize {
			return nil, fmt.Errorf("--file %s: %s is more than the %s allowed per file (SANDPIPER_FILE_MAX_SIZE)", p, sandbox.FormatSize(fi.Size()), sandbox.FormatSize(lim.FileSize))
		}
		if total += fi.Size(); total > lim.RunSize {
			return nil, fmt.Errorf("--file %s: the files hold more than the %s allowed per run (SANDPIPER_FILES_MAX_TOTAL)", p, sandbox.FormatSize(lim.RunSize))
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("--file: %w", err)
		}
		name := sandbox.UniqueName(sandbox.SafeName(filepath.Base(p), ""), func(n string) bool { return taken[n] })
		taken[name] = true
		out = append(out, agent.InputFile{File: sandbox.File{Name: name, Data: data}, Source: "given with --file " + p})
	}
	return out, nil
}
