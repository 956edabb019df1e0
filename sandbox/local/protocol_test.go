//go:build linux && cgo && (amd64 || arm64)

package local

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

// stream builds a result stream as init writes it.
type stream struct{ bytes.Buffer }

// msgN appends a message whose header claims n bytes, followed by parts.
func (s *stream) msgN(typ uint32, n uint64, parts ...string) *stream {
	var h [12]byte
	binary.NativeEndian.PutUint32(h[:4], typ)
	binary.NativeEndian.PutUint64(h[4:], n)
	s.Write(h[:])
	for _, p := range parts {
		s.WriteString(p)
	}
	return s
}

func (s *stream) msg(typ uint32, parts ...string) *stream {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	return s.msgN(typ, uint64(n), parts...)
}

func (s *stream) status() *stream { return s.msg(rStatus, string(make([]byte, statusSize))) }
func (s *stream) file(name, data string) *stream {
	return s.msg(rFile, name, "\x00", data)
}
func (s *stream) end() *stream { return s.msg(rEnd) }

func (s *stream) cut(unlisted uint64, stopped, skipped bool) *stream {
	b := make([]byte, cutSize)
	binary.NativeEndian.PutUint64(b, unlisted)
	if stopped {
		b[8] = 1
	}
	if skipped {
		b[12] = 1
	}
	return s.msg(rCut, string(b))
}

// fuzzLimits are the limits the decoder is fuzzed with: small, so that
// breaking them is easy to find.
var fuzzLimits = sandbox.Limits{Files: 4, DiskSize: 1 << 20, StateSize: 1 << 20}

func TestDecodeResult(t *testing.T) {
	huge := uint64(1) << 60
	for _, tc := range []struct {
		name    string
		in      *stream
		err     string // "" for none
		files   int
		omitted []string
		capped  bool
		state   string
	}{
		{name: "ordinary", in: new(stream).status().file("a.txt", "x").file("d/b", "yy").msg(rOmit, "fifo (not a regular file)").end(),
			files: 2, omitted: []string{"fifo (not a regular file)"}},
		{name: "setup error", in: new(stream).msg(rErr, "mount: EPERM").end()},
		{name: "no status", in: new(stream).end(), err: "without a status"},
		{name: "truncated", in: new(stream).status().file("a", "x"), err: "EOF"},
		{name: "truncated file", in: new(stream).status().msgN(rFile, 1000, "a\x00xx"), err: "EOF"},
		{name: "status of the wrong size", in: new(stream).msg(rStatus, "xx").end(), err: "want"},
		{name: "unknown message", in: new(stream).status().msg(99).end(), err: "unknown"},
		{name: "huge error", in: new(stream).msgN(rErr, huge), err: "more than"},
		{name: "huge omit", in: new(stream).status().msgN(rOmit, huge), err: "more than"},
		{name: "huge file", in: new(stream).status().msgN(rFile, huge, "a\x00"), err: "disk limit"},
		{name: "file past the disk budget", in: new(stream).status().file("a", strings.Repeat("x", 600<<10)).file("b", strings.Repeat("x", 600<<10)).end(),
			err: "disk limit"},
		{name: "file name without an end", in: new(stream).status().msg(rFile, strings.Repeat("n", 5000)).end(), err: "without a name"},
		{name: "bad file name", in: new(stream).status().file("../x", "").end(), err: "clean relative path"},
		{name: "end with a body", in: new(stream).status().msg(rEnd, "x"), err: "end message"},
		{name: "too many files", in: new(stream).status().file("a", "").file("b", "").file("c", "").file("d", "").file("e", "x").file("f", "").end(),
			files: 4, omitted: []string{sandbox.MoreOmitted(2, false)}, capped: true},
		{name: "too many omitted", in: func() *stream {
			s := new(stream).status()
			for range sandbox.MaxOmitted + 5 {
				s.msg(rOmit, "p (not a regular file)")
			}
			return s.end()
		}(), omitted: append(slices.Repeat([]string{"p (not a regular file)"}, sandbox.MaxOmitted), sandbox.MoreOmitted(5, false)), capped: true},
		{name: "init's count", in: new(stream).status().msg(rOmit, "p (not a regular file)").cut(12345, false, false).end(),
			omitted: []string{"p (not a regular file)", sandbox.MoreOmitted(12345, false)}, capped: true},
		{name: "init's walk stopped", in: new(stream).status().cut(12345, true, false).end(),
			omitted: []string{sandbox.MoreOmitted(12345, true)}, capped: true},
		{name: "init's count, a directory skipped", in: new(stream).status().cut(3, false, true).end(),
			omitted: []string{sandbox.MoreOmitted(3, true)}, capped: true},
		{name: "a directory skipped, listed", in: new(stream).status().msg(rOmit, "d (too deep)").cut(0, false, true).end(),
			omitted: []string{"d (too deep)"}, capped: true},
		{name: "names cut by init", in: new(stream).status().cut(0, false, false).end(), capped: true},
		{name: "state", in: new(stream).status().msg(rStateRep, `{"saved": true}`).msg(rState, "state").end(), state: "state"},
		{name: "huge state", in: new(stream).status().msgN(rState, huge), err: "more than the limit"},
		{name: "state past its limit", in: new(stream).status().msg(rState, strings.Repeat("x", 1<<20+1)).end(), err: "more than the limit"},
		{name: "huge state report", in: new(stream).status().msgN(rStateRep, huge), err: "more than"},
		{name: "two states", in: new(stream).status().msg(rState, "a").msg(rState, "b").end(), err: "a second state"},
		{name: "two state reports", in: new(stream).status().msg(rStateRep, "{}").msg(rStateRep, "{}").end(), err: "a second state report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := decodeResult(bytes.NewReader(tc.in.Bytes()), fuzzLimits)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Files) != tc.files || !slices.Equal(res.Omitted, tc.omitted) || res.Capped != tc.capped {
				t.Errorf("files %d, omitted %q, capped %v; want %d, %q, %v", len(res.Files), res.Omitted, res.Capped, tc.files, tc.omitted, tc.capped)
			}
			if string(res.State) != tc.state {
				t.Errorf("state %q, want %q", res.State, tc.state)
			}
			checkDecoded(t, res)
		})
	}
}

// TestDecodeResultAllocation checks that what a header claims costs nothing
// until the bytes arrive.
func TestDecodeResultAllocation(t *testing.T) {
	lim := sandbox.Limits{DiskSize: 1 << 40} // a budget that does not stop it
	for _, n := range []uint64{1 << 30, 1 << 39} {
		in := new(stream).status().msgN(rFile, n, "a\x00", strings.Repeat("x", 100<<10)).Bytes()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := decodeResult(bytes.NewReader(in), lim)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Fatal("a truncated file decoded")
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("a file claiming %d bytes, 100 KB sent: allocated %d bytes", n, alloc)
		}
	}
	// A state claiming its whole limit is read by eighths before it
	// gets one allocation of its size.
	in := new(stream).status().msgN(rState, 1<<30, strings.Repeat("x", 100<<10)).Bytes()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := decodeResult(bytes.NewReader(in), sandbox.Limits{StateSize: 1 << 30}); err == nil {
		t.Fatal("a truncated state decoded")
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("a state claiming 1 GiB, 100 KB sent: allocated %d bytes", alloc)
	}
}

// FuzzDecodeResult checks that no stream makes the decoder panic or
// allocate much more than the stream holds, and that what it decodes is
// within the caps. The seeds include result streams captured from real runs
// (testdata/fuzz/FuzzDecodeResult).
func FuzzDecodeResult(f *testing.F) {
	f.Add(new(stream).status().file("a.txt", "x").file("d/b", "yy").msg(rOmit, "fifo (not a regular file)").msg(rTimes, "12345678").end().Bytes())
	f.Add(new(stream).msg(rErr, "mount: EPERM").end().Bytes())
	f.Add(new(stream).status().msgN(rFile, 1<<60, "a\x00").Bytes())
	f.Add(new(stream).status().msgN(rFile, 1<<20-1, "a\x00xxxx").Bytes())
	f.Add(new(stream).status().msgN(rOmit, 1<<62, "x").Bytes())
	f.Add(new(stream).status().file("a", "").file("b", "").file("c", "").file("d", "").file("e", "x").cut(3, true, true).end().Bytes())
	f.Add(new(stream).status().msg(rStateRep, `{"saved": true, "size": 5}`).msg(rState, "state").end().Bytes())
	f.Add(new(stream).status().msgN(rState, 1<<20+1, "x").Bytes())
	f.Fuzz(func(t *testing.T, in []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := decodeResult(bytes.NewReader(in), fuzzLimits)
		runtime.ReadMemStats(&after)
		// The reader's buffer, a file's first chunk, and then at most
		// a few times what arrived.
		if alloc, bound := after.TotalAlloc-before.TotalAlloc, 8*uint64(len(in))+512<<10; alloc > bound {
			t.Errorf("allocated %d bytes for a stream of %d", alloc, len(in))
		}
		if err != nil {
			return
		}
		checkDecoded(t, res)
		// Bound keeps the files, and makes the list fit its caps.
		r := sandbox.Result{Files: slices.Clone(res.Files), FilesOmitted: slices.Clone(res.Omitted)}
		r.Bound(fuzzLimits)
		if len(r.Files) != len(res.Files) {
			t.Errorf("Bound dropped %d decoded files", len(res.Files)-len(r.Files))
		}
		for _, e := range r.FilesOmitted {
			if len(e) > sandbox.MaxOmittedName+sandbox.MaxOmittedWhy+3 {
				t.Errorf("omitted entry of %d bytes after Bound", len(e))
			}
		}
		checkDecoded(t, initResult{Files: r.Files, Omitted: r.FilesOmitted, Capped: slices.Contains(r.Caps, sandbox.CapResultList)})
	})
}

// checkDecoded checks the invariants of a decoded result.
func checkDecoded(t *testing.T, res initResult) {
	t.Helper()
	if len(res.Files) > fuzzLimits.Files {
		t.Errorf("%d files", len(res.Files))
	}
	var size int64
	for _, f := range res.Files {
		size += int64(len(f.Data))
		if !sandbox.ValidName(f.Name) {
			t.Errorf("file name %q", f.Name)
		}
	}
	if size > fuzzLimits.DiskSize {
		t.Errorf("files of %d bytes", size)
	}
	if int64(len(res.State)) > fuzzLimits.StateSize || len(res.StateReport) > sandbox.MaxStateReport {
		t.Errorf("a state of %d bytes, a report of %d", len(res.State), len(res.StateReport))
	}
	list := res.Omitted
	if len(list) > 0 {
		if _, _, ok := sandbox.ParseMoreOmitted(list[len(list)-1]); ok {
			list = list[:len(list)-1]
			if !res.Capped {
				t.Error("a count of entries left out, but not capped")
			}
		}
	}
	n := 0
	for _, e := range list {
		n += len(e)
		if len(e) > maxTextMessage {
			t.Errorf("omitted entry of %d bytes", len(e))
		}
	}
	if len(list) > sandbox.MaxOmitted || n > sandbox.MaxOmittedBytes {
		t.Errorf("%d omitted entries of %d bytes", len(list), n)
	}
}

// TestDecodeEvent reads what init says of warming, and refuses what it
// never says.
func TestDecodeEvent(t *testing.T) {
	ready := make([]byte, warmMsgSize)
	binary.NativeEndian.PutUint64(ready, 61<<20)
	binary.NativeEndian.PutUint64(ready[8:], 900e6)
	binary.NativeEndian.PutUint64(ready[16:], 1100e6)
	var in stream
	in.msg(eWarmReady, string(ready)).msg(eWarmFailed, "import x: ImportError: no").msg(eWarmFailed)
	ev, err := decodeEvent(&in)
	if err != nil || !ev.Ready || ev.Memory != 61<<20 || ev.CPU != 900*time.Millisecond || ev.Wall != 1100*time.Millisecond {
		t.Errorf("ready: %+v, %v", ev, err)
	}
	ev, err = decodeEvent(&in)
	if err != nil || ev.Ready || ev.Failed != "import x: ImportError: no" {
		t.Errorf("failed: %+v, %v", ev, err)
	}
	ev, err = decodeEvent(&in)
	if err != nil || ev.Failed == "" {
		t.Errorf("failed without a reason: %+v, %v", ev, err)
	}
	if _, err := decodeEvent(&in); err == nil {
		t.Error("no error at the end of the stream")
	}
	for name, s := range map[string]*stream{
		"unknown type":     new(stream).msg(rStatus, string(make([]byte, statusSize))),
		"short ready":      new(stream).msg(eWarmReady, "x"),
		"huge reason":      new(stream).msgN(eWarmFailed, 1<<40, "x"),
		"truncated reason": new(stream).msgN(eWarmFailed, 10, "x"),
	} {
		if ev, err := decodeEvent(s); err == nil {
			t.Errorf("%s: %+v, want an error", name, ev)
		}
	}
}
