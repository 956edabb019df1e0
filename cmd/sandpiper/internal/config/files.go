package config

import (
	"context"
	"fmt"

	"github.com/sethvargo/go-envconfig"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// Files is the file limits' part of the environment; the defaults are
// sandbox's (sandbox.DefaultMaxFileSize …).
type Files struct {
	FileSize   ByteSize `env:"SANDPIPER_FILE_MAX_SIZE"`
	RunSize    ByteSize `env:"SANDPIPER_FILES_MAX_TOTAL"`
	RunFiles   int      `env:"SANDPIPER_FILES_MAX_COUNT"`
	ThreadSize ByteSize `env:"SANDPIPER_WORKSPACE_MAX_SIZE"`
	Uploads    int      `env:"SANDPIPER_UPLOADS_MAX"`
}

// Limits returns the limits f sets.
func (f Files) Limits() sandbox.FileLimits {
	return sandbox.FileLimits{FileSize: f.FileSize.n, RunSize: f.RunSize.n, RunFiles: f.RunFiles, ThreadSize: f.ThreadSize.n, Uploads: f.Uploads}
}

// LoadFiles reads the file limits' variables; errors name the variable to
// fix.
func LoadFiles(ctx context.Context, lookup envconfig.Lookuper) (Files, error) {
	d := sandbox.FileLimits{}.WithDefaults()
	e := Files{FileSize: ByteSize{n: d.FileSize}, RunSize: ByteSize{n: d.RunSize}, RunFiles: d.RunFiles, ThreadSize: ByteSize{n: d.ThreadSize}, Uploads: d.Uploads}
	return e, Join(Process(ctx, lookup, &e),
		CheckRange("SANDPIPER_FILE_MAX_SIZE", e.FileSize, "at least 1KiB", e.FileSize.n < 1<<10),
		CheckRange("SANDPIPER_FILES_MAX_TOTAL", e.RunSize, "at least SANDPIPER_FILE_MAX_SIZE ("+e.FileSize.String()+")", e.RunSize.n < e.FileSize.n),
		CheckRange("SANDPIPER_FILES_MAX_COUNT", e.RunFiles, fmt.Sprintf("1 to %d", sandbox.DefaultInputFiles), e.RunFiles < 1 || e.RunFiles > sandbox.DefaultInputFiles),
		CheckRange("SANDPIPER_WORKSPACE_MAX_SIZE", e.ThreadSize, "at least SANDPIPER_FILES_MAX_TOTAL ("+e.RunSize.String()+")", e.ThreadSize.n < e.RunSize.n),
		CheckRange("SANDPIPER_UPLOADS_MAX", e.Uploads, "at least 1", e.Uploads < 1),
	)
}
