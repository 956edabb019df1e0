package sandbox

import (
	"encoding/json"
	"fmt"
	"time"
)

// A stateful run (Request.KeepState) carries a conversation's Python
// state from one run to the next as data: the runner ([StateRunner])
// restores the names an earlier run saved into the fresh __main__ before
// the code, and saves the names the code leaves after it (pickle protocol
// 5; functions, lambdas and classes the code defined by value, modules by
// name), inside the sandbox. What it cannot save (open files, sockets,
// generators, locks, values past the limit) is dropped, and the run's
// StateResult says which names and why. The backends carry the state in
// and out as bytes; nothing outside a sandbox unpickles it.

// Bounds on what a stateful run reports of its state.
const (
	// MaxStateReport bounds the report the runner writes (JSON), in
	// bytes; a longer one is refused.
	MaxStateReport = 64 << 10
	// MaxStateNames bounds each list of names of a [StateResult]; the
	// counts go on counting.
	MaxStateNames = 300
	// MaxStateName bounds a name, and MaxStateWhy the reason after it, in
	// bytes.
	MaxStateName = 100
	MaxStateWhy  = 200
)

// StateResult is what a stateful run said of its state.
type StateResult struct {
	// Data is the state saved at the run's end, for the conversation's
	// next run; nil when none was saved (the run was killed, or the save
	// failed): the state before the run stands.
	Data []byte
	// Restored names the names restored from the request's State, and
	// NotRestored those that could not be, as "name (why)"; Kept the
	// names saved in Data, and Dropped those left out, as "name (why)".
	// Each list holds at most MaxStateNames entries; the counts count
	// them all.
	Restored, NotRestored, Kept, Dropped                     []string
	RestoredCount, NotRestoredCount, KeptCount, DroppedCount int
	// Unreadable says why the request's State could not be read at all
	// (damaged, or of another version): the run started without names,
	// and the front end should set that state aside.
	Unreadable string
	// RestoreFailed says why restoring the request's State stopped
	// before the code ran (it took more than half the run's time, or
	// ended the process): the code then ran without names, and the front
	// end should set that state aside.
	RestoreFailed string
	// Unsaved says why no state was saved, when none was.
	Unsaved string
	// RestoreTime and SaveTime are what restoring and saving took, as
	// the sandbox measured them (0 when unknown).
	RestoreTime, SaveTime time.Duration
}

// stateReport is the runner's report (state.py writes it).
type stateReport struct {
	Restored         []string    `json:"restored"`
	RestoredCount    int         `json:"restoredCount"`
	NotRestored      [][2]string `json:"notRestored"`
	NotRestoredCount int         `json:"notRestoredCount"`
	Kept             []string    `json:"kept"`
	KeptCount        int         `json:"keptCount"`
	Dropped          [][2]string `json:"dropped"`
	DroppedCount     int         `json:"droppedCount"`
	Unreadable       string      `json:"unreadable"`
	RestoreFailed    string      `json:"restoreFailed"`
	Saved            bool        `json:"saved"`
	Size             int64       `json:"size"`
	SaveError        string      `json:"saveError"`
	RestoreSeconds   float64     `json:"restoreSeconds"`
	SaveSeconds      float64     `json:"saveSeconds"`
}

// ParseState reads what a stateful run left in its state directory: the
// runner's report (nil when it wrote none) and the state it saved (nil
// when none). Data is kept only when the report says it was saved whole,
// with its size. A report that is missing, too long or not the runner's
// says so in Unsaved.
func ParseState(report, data []byte) *StateResult {
	s := &StateResult{}
	var r stateReport
	switch {
	case report == nil:
		s.Unsaved = "the run ended before its state was saved"
		return s
	case len(report) > MaxStateReport:
		s.Unsaved = "the sandbox's report on the state was too long"
		return s
	}
	if err := json.Unmarshal(report, &r); err != nil {
		s.Unsaved = "the sandbox's report on the state was unreadable"
		return s
	}
	pairs := func(ps [][2]string) []string {
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			out = append(out, p[0]+" ("+p[1]+")")
		}
		return out
	}
	s.Restored, s.RestoredCount = r.Restored, r.RestoredCount
	s.NotRestored, s.NotRestoredCount = pairs(r.NotRestored), r.NotRestoredCount
	s.Kept, s.KeptCount = r.Kept, r.KeptCount
	s.Dropped, s.DroppedCount = pairs(r.Dropped), r.DroppedCount
	s.Unreadable = r.Unreadable
	s.RestoreFailed = r.RestoreFailed
	s.RestoreTime, s.SaveTime = seconds(r.RestoreSeconds), seconds(r.SaveSeconds)
	switch {
	case !r.Saved && r.SaveError != "":
		s.Unsaved = "saving failed: " + r.SaveError
	case !r.Saved:
		s.Unsaved = "the run ended before its state was saved"
	case data == nil || int64(len(data)) != r.Size:
		s.Unsaved = "the saved state did not come back whole"
	default:
		s.Data = data
	}
	if s.Data == nil {
		s.Kept, s.KeptCount, s.Dropped, s.DroppedCount = nil, 0, nil, 0
	}
	return s
}

// seconds turns what the sandbox measured into a duration, 0 when it is
// not one a run could take.
func seconds(s float64) time.Duration {
	if !(s > 0 && s < 1e6) {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}

// bound holds s to its caps, for a run that ended at limit.
func (s *StateResult) bound(lim Limits, limit Limit) {
	if s == nil {
		return
	}
	switch {
	case s.Data == nil:
	case limit == LimitTimeout || limit == LimitMemory:
		s.Data, s.Unsaved = nil, fmt.Sprintf("the run was stopped (%s)", limit)
	case int64(len(s.Data)) > lim.StateSize:
		s.Data, s.Unsaved = nil, "the saved state passed its limit of "+FormatSize(lim.StateSize)
	}
	if s.Data == nil {
		s.Kept, s.KeptCount, s.Dropped, s.DroppedCount = nil, 0, nil, 0
	}
	s.Restored, s.RestoredCount = boundNames(s.Restored, s.RestoredCount)
	s.NotRestored, s.NotRestoredCount = boundNames(s.NotRestored, s.NotRestoredCount)
	s.Kept, s.KeptCount = boundNames(s.Kept, s.KeptCount)
	s.Dropped, s.DroppedCount = boundNames(s.Dropped, s.DroppedCount)
	s.Unreadable = CutName(s.Unreadable, MaxStateWhy)
	s.RestoreFailed = CutName(s.RestoreFailed, MaxStateWhy)
	s.Unsaved = CutName(s.Unsaved, MaxStateWhy)
}

// boundNames keeps at most MaxStateNames names, each cut ([cutOmitted]
// keeps a reason in parentheses), and a count of at least as many.
func boundNames(names []string, count int) ([]string, int) {
	count = max(count, len(names))
	if len(names) > MaxStateNames {
		names = names[:MaxStateNames]
	}
	for i, n := range names {
		names[i] = cutState(n)
	}
	return names, count
}

// cutState bounds one name, with a reason in parentheses after it.
func cutState(e string) string {
	if i := indexReason(e); i >= 0 {
		return CutName(e[:i], MaxStateName) + " (" + CutName(e[i+2:len(e)-1], MaxStateWhy) + ")"
	}
	return CutName(e, MaxStateName)
}

// indexReason returns where " (why)" starts in "name (why)", or -1.
func indexReason(e string) int {
	if len(e) < 4 || e[len(e)-1] != ')' {
		return -1
	}
	for i := 0; i+1 < len(e); i++ {
		if e[i] == ' ' && e[i+1] == '(' {
			return i
		}
	}
	return -1
}
