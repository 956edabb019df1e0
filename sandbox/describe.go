package sandbox

import (
	"fmt"
	"strconv"
)

// FormatSize writes a byte count for people (and models) to read: "1
// byte", "812 bytes", "2.3 KiB", "512.0 MiB", "1.5 GiB". Every front end
// shows sizes with it.
func FormatSize(n int64) string {
	switch {
	case n == 1:
		return "1 byte"
	case n < 1<<10:
		return strconv.FormatInt(n, 10) + " bytes"
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// LimitNote says in words which limit ended the run or was hit during it,
// with its value from lim (zero fields take the defaults): "timed out
// after 30s", "killed at the memory limit of 512.0 MiB" … It returns ""
// when no limit was hit. Front ends show it as they show the rest of a
// run; it holds no text of the program's.
func (r *Result) LimitNote(lim Limits) string {
	lim = lim.WithDefaults()
	switch r.Limit {
	case LimitNone:
		return ""
	case LimitTimeout:
		return "timed out after " + lim.Timeout.String()
	case LimitMemory:
		return "killed at the memory limit of " + FormatSize(lim.Memory)
	case LimitCPU:
		return "killed at the CPU-time limit of " + lim.CPUTime.String()
	case LimitProcesses:
		return fmt.Sprintf("reached the limit of %d processes and threads", lim.Processes)
	case LimitDisk:
		return "a write failed at the disk limit of " + FormatSize(lim.DiskSize)
	}
	return fmt.Sprintf("reached the %s limit", r.Limit)
}
