package config

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// files is the file limits' part of the environment; the defaults are
// sandbox's (sandbox.DefaultMaxFileSize …).
type files struct {
	FileSize   byteSize `env:"SANDPIPER_FILE_MAX_SIZE"`
	RunSize    byteSize `env:"SANDPIPER_FILES_MAX_TOTAL"`
	RunFiles   int      `env:"SANDPIPER_FILES_MAX_COUNT"`
	ThreadSize byteSize `env:"SANDPIPER_WORKSPACE_MAX_SIZE"`
	Uploads    int      `env:"SANDPIPER_UPLOADS_MAX"`
}

// LoadFiles reads the file limits' variables; errors name the variable to
// fix.
func LoadFiles(ctx context.Context, lookup envconfig.Lookuper) (sandbox.FileLimits, error) {
	d := sandbox.FileLimits{}.WithDefaults()
	e := files{FileSize: byteSize{n: d.FileSize}, RunSize: byteSize{n: d.RunSize}, RunFiles: d.RunFiles, ThreadSize: byteSize{n: d.ThreadSize}, Uploads: d.Uploads}
	if err := process(ctx, lookup, &e); err != nil {
		return sandbox.FileLimits{}, err
	}
	if err := checkRanges(
		rangeCheck{"SANDPIPER_FILE_MAX_SIZE", e.FileSize.String(), "at least 1KiB", e.FileSize.n < 1<<10},
		rangeCheck{"SANDPIPER_FILES_MAX_TOTAL", e.RunSize.String(), "at least SANDPIPER_FILE_MAX_SIZE (" + e.FileSize.String() + ")", e.RunSize.n < e.FileSize.n},
		rangeCheck{"SANDPIPER_FILES_MAX_COUNT", strconv.Itoa(e.RunFiles), fmt.Sprintf("1 to %d", sandbox.DefaultInputFiles), e.RunFiles < 1 || e.RunFiles > sandbox.DefaultInputFiles},
		rangeCheck{"SANDPIPER_WORKSPACE_MAX_SIZE", e.ThreadSize.String(), "at least SANDPIPER_FILES_MAX_TOTAL (" + e.RunSize.String() + ")", e.ThreadSize.n < e.RunSize.n},
		rangeCheck{"SANDPIPER_UPLOADS_MAX", strconv.Itoa(e.Uploads), "at least 1", e.Uploads < 1},
	); err != nil {
		return sandbox.FileLimits{}, err
	}
	return sandbox.FileLimits{FileSize: e.FileSize.n, RunSize: e.RunSize.n, RunFiles: e.RunFiles, ThreadSize: e.ThreadSize.n, Uploads: e.Uploads}, nil
}
