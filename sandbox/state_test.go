package sandbox

import (
	"slices"
	"strings"
	"testing"
)

func TestParseState(t *testing.T) {
	full := `{"restored": ["a"], "restoredCount": 1, "notRestored": [["b", "gone"]], "notRestoredCount": 1,
		"kept": ["a", "c"], "keptCount": 2, "dropped": [["g", "cannot pickle 'generator' object"]], "droppedCount": 1, "saved": true, "size": 5}`
	for _, tc := range []struct {
		name           string
		report, data   string
		noReport       bool
		limit          Limit
		lim            Limits
		data2, unsaved string
		kept           []string
	}{
		{name: "saved", report: full, data: "state", data2: "state", kept: []string{"a", "c"}},
		{name: "no report", noReport: true, data: "state", unsaved: "the run ended before its state was saved"},
		{name: "not saved", report: `{"saved": false}`, unsaved: "the run ended before its state was saved"},
		{name: "save failed", report: `{"saved": false, "saveError": "OSError: disk full"}`, unsaved: "saving failed: OSError: disk full"},
		{name: "size differs", report: full, data: "stat", unsaved: "did not come back whole"},
		{name: "not JSON", report: "{", data: "state", unsaved: "unreadable"},
		{name: "report too long", report: strings.Repeat(" ", MaxStateReport+1), unsaved: "too long"},
		{name: "timed out", report: full, data: "state", limit: LimitTimeout, unsaved: "the run was stopped (timeout)"},
		{name: "killed at the memory limit", report: full, data: "state", limit: LimitMemory, unsaved: "the run was stopped (memory)"},
		{name: "past the limit", report: full, data: "state", lim: Limits{StateSize: 4}, unsaved: "passed its limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var report, data []byte
			if !tc.noReport {
				report = []byte(tc.report)
			}
			if tc.data != "" {
				data = []byte(tc.data)
			}
			r := &Result{Limit: tc.limit, State: ParseState(report, data)}
			r.Bound(tc.lim)
			st := r.State
			if string(st.Data) != tc.data2 || !strings.Contains(st.Unsaved, tc.unsaved) || (tc.unsaved == "") != (st.Unsaved == "") {
				t.Errorf("data %q unsaved %q; want %q, %q", st.Data, st.Unsaved, tc.data2, tc.unsaved)
			}
			if !slices.Equal(st.Kept, tc.kept) {
				t.Errorf("kept %v, want %v", st.Kept, tc.kept)
			}
			if tc.name == "saved" && (!slices.Equal(st.NotRestored, []string{"b (gone)"}) || !slices.Equal(st.Dropped, []string{"g (cannot pickle 'generator' object)"})) {
				t.Errorf("not restored %q, dropped %q", st.NotRestored, st.Dropped)
			}
		})
	}
}

// TestStateBound: whatever the sandbox reports, the lists stay within
// their caps, and the counts count what was cut.
func TestStateBound(t *testing.T) {
	long := strings.Repeat("n", 500)
	st := &StateResult{Data: []byte("x"), Kept: slices.Repeat([]string{long}, MaxStateNames+10), KeptCount: 3,
		Dropped: []string{long + " (" + strings.Repeat("w", 500) + ")"}, Unreadable: strings.Repeat("u", 1000)}
	r := &Result{State: st}
	r.Bound(Limits{})
	if len(st.Kept) != MaxStateNames || st.KeptCount != MaxStateNames+10 || len(st.Kept[0]) > MaxStateName {
		t.Errorf("kept %d names (count %d), the first of %d bytes", len(st.Kept), st.KeptCount, len(st.Kept[0]))
	}
	if d := st.Dropped[0]; len(d) > MaxStateName+MaxStateWhy+3 || !strings.HasSuffix(d, "…)") {
		t.Errorf("dropped %q", d)
	}
	if len(st.Unreadable) > MaxStateWhy {
		t.Errorf("unreadable of %d bytes", len(st.Unreadable))
	}
}

func TestRequestCheckState(t *testing.T) {
	if err := (&Request{Code: "x", State: []byte("s")}).Check(Limits{}); err == nil {
		t.Error("a state without KeepState passed")
	}
	if err := (&Request{Code: "x", KeepState: true, State: make([]byte, 10)}).Check(Limits{StateSize: 9}); err == nil {
		t.Error("a state past its limit passed")
	}
	if err := (&Request{Code: "x", KeepState: true, State: make([]byte, 10)}).Check(Limits{StateSize: 10}); err != nil {
		t.Error(err)
	}
	stream := func(n int64) *Request {
		return &Request{Code: "x", KeepState: true, StateFrom: strings.NewReader("0123456789"), StateLen: n}
	}
	if err := stream(10).Check(Limits{StateSize: 9}); err == nil {
		t.Error("a streamed state past its limit passed")
	}
	if err := stream(10).Check(Limits{StateSize: 10}); err != nil || stream(10).StateSize() != 10 {
		t.Error(err)
	}
	if err := (&Request{Code: "x", StateFrom: strings.NewReader("s"), StateLen: 1}).Check(Limits{}); err == nil {
		t.Error("a streamed state without KeepState passed")
	}
	both := stream(1)
	both.State = []byte("s")
	if err := both.Check(Limits{}); err == nil {
		t.Error("a state both as bytes and as a stream passed")
	}
}
