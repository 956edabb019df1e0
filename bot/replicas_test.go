package bot

import (
	"reflect"
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot/thread"
)

// TestTaskRoundTrip: a task comes out of the queue as it went in, its
// files' download links included.
func TestTaskRoundTrip(t *testing.T) {
	for _, in := range []task{
		{Route: question, Message: message{Channel: "C1", User: "U1", TS: "1.2", ThreadTS: "1.2", Text: "compute 6*7"}, EventID: "Ev1"},
		{Route: followUp, Message: message{Channel: "D1", User: "U2", TS: "1.3", ThreadTS: "1.1", IM: true, Files: []thread.FileRef{
			{ID: "F1", Name: "a.csv", Size: 10, Mimetype: "text/csv", Filetype: "csv", Mode: "hosted", URL: "https://files/a.csv", User: "U2"},
			{ID: "F2", Name: "doc", External: true},
		}}},
		{Route: command, Message: message{Channel: "C1", TS: "1.4", ThreadTS: "1.4", Text: "debug on"}},
	} {
		payload, err := encodeTask(in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := decodeTask(payload)
		if err != nil {
			t.Fatal(err)
		}
		in.EventID = "" // not queued: Redis dedupes on it
		if !reflect.DeepEqual(out, in) {
			t.Errorf("got %+v\nwant %+v", out, in)
		}
	}
	if _, err := decodeTask([]byte("{")); err == nil {
		t.Error("a broken payload decoded")
	}
}
