package sandbox

import "cmp"

// Defaults for [FileLimits]; its zero fields take them.
const (
	DefaultMaxFileSize   = 25 << 20  // one file read in or delivered
	DefaultMaxRunFiles   = 20        // files placed in one run
	DefaultMaxRunSize    = 50 << 20  // bytes of files placed in one run
	DefaultMaxThreadSize = 200 << 20 // a conversation's workspace
	DefaultMaxUploads    = 10        // files delivered per answer
)

// FileLimits bound the files a front end puts into runs (a person's
// attachments, the files earlier runs wrote) and takes out of them. Zero
// fields take the defaults above.
type FileLimits struct {
	FileSize   int64 // one file, read in or delivered
	RunFiles   int   // files placed in one run, at most DefaultInputFiles
	RunSize    int64 // bytes placed in one run
	ThreadSize int64 // a conversation's workspace (a Slack thread's)
	Uploads    int   // files delivered per answer
}

// WithDefaults returns l with every zero field set to its default.
func (l FileLimits) WithDefaults() FileLimits {
	l.FileSize = cmp.Or(l.FileSize, DefaultMaxFileSize)
	l.RunFiles = cmp.Or(l.RunFiles, DefaultMaxRunFiles)
	l.RunSize = cmp.Or(l.RunSize, DefaultMaxRunSize)
	l.ThreadSize = cmp.Or(l.ThreadSize, DefaultMaxThreadSize)
	l.Uploads = cmp.Or(l.Uploads, DefaultMaxUploads)
	return l
}
