package agent

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sandpiper-bot/sandpiper/sandbox"
)

func TestMemWorkspace(t *testing.T) {
	w := NewMemWorkspace([]sandbox.File{{Name: "a.csv", Data: []byte("12345")}}, 10)
	if dropped, _ := w.Put(t.Context(), []sandbox.File{{Name: "b.txt", Data: []byte("123")}, {Name: "a.csv", Data: []byte("1234567")}}); len(dropped) != 0 {
		t.Errorf("dropped %v, want none (a.csv replaced in place)", dropped)
	}
	if dropped, _ := w.Put(t.Context(), []sandbox.File{{Name: "c.bin", Data: []byte("1")}}); len(dropped) != 1 || dropped[0] != "c.bin" {
		t.Errorf("dropped %v, want [c.bin] (over the 10-byte bound)", dropped)
	}
	many := NewMemWorkspace(nil, 0)
	for i := range sandbox.DefaultInputFiles + 2 {
		many.Put(t.Context(), []sandbox.File{{Name: fmt.Sprintf("f%d", i)}})
	}
	if files, _ := many.Files(t.Context()); len(files) != sandbox.DefaultInputFiles {
		t.Errorf("%d files kept, want the %d a sandbox accepts", len(files), sandbox.DefaultInputFiles)
	}
	var names []string
	files, _ := w.Files(t.Context())
	for _, f := range files {
		names = append(names, f.Name+"="+string(f.Data))
	}
	if got := strings.Join(names, " "); got != "a.csv=1234567 b.txt=123" {
		t.Errorf("files = %s", got)
	}
}
