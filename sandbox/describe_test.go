package sandbox

import (
	"testing"
	"time"
)

func TestFormatSize(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{0, "0 bytes"}, {1, "1 byte"}, {1023, "1023 bytes"}, {1024, "1.0 KiB"}, {2355, "2.3 KiB"},
		{1 << 20, "1.0 MiB"}, {512 << 20, "512.0 MiB"}, {1 << 30, "1.0 GiB"}, {3 << 29, "1.5 GiB"},
	} {
		if got := FormatSize(tt.n); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestLimitNote(t *testing.T) {
	lim := Limits{Timeout: time.Second, Memory: 64 << 20}
	for _, tt := range []struct {
		limit Limit
		want  string
	}{
		{LimitNone, ""},
		{LimitTimeout, "timed out after 1s"},
		{LimitMemory, "killed at the memory limit of 64.0 MiB"},
		{LimitCPU, "killed at the CPU-time limit of 1m0s"},
		{LimitProcesses, "reached the limit of 64 processes and threads"},
		{LimitDisk, "a write failed at the disk limit of 64.0 MiB"},
		{"gpu", "reached the gpu limit"},
	} {
		r := &Result{Limit: tt.limit}
		if got := r.LimitNote(lim); got != tt.want {
			t.Errorf("LimitNote with limit %q = %q, want %q", tt.limit, got, tt.want)
		}
	}
}
