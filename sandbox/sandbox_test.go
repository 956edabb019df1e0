package sandbox

import (
	"strings"
	"testing"
	"time"
)

func TestLimitsOr(t *testing.T) {
	got := Limits{Timeout: time.Second}.Or(Limits{Timeout: time.Minute, Memory: 1 << 20})
	want := Limits{Timeout: time.Second, Memory: 1 << 20}.WithDefaults()
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if (Limits{}).Or(Limits{}) != (Limits{}).WithDefaults() {
		t.Error("zero limits do not take the defaults")
	}
}

func TestCheckFiles(t *testing.T) {
	ok := []File{{Name: "data.csv"}, {Name: "sub/dir/x.txt"}, {Name: ".hidden"}}
	if err := CheckFiles(ok, Limits{}); err != nil {
		t.Errorf("clean names refused: %v", err)
	}
	for _, name := range []string{"", ".", "..", "../x", "/etc/passwd", "a/../b", "a//b", "a/", "x\x00y", strings.Repeat("n", 1025)} {
		if err := CheckFiles([]File{{Name: name}}, Limits{}); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if err := CheckFiles([]File{{Name: "a"}, {Name: "a"}}, Limits{}); err == nil {
		t.Error("duplicate accepted")
	}
	if err := CheckFiles([]File{{Name: "a", Data: make([]byte, 11)}}, Limits{DiskSize: 10}); err == nil {
		t.Error("files over the disk limit accepted")
	}
	if err := CheckFiles(make([]File, DefaultInputFiles+1), Limits{}); err == nil {
		t.Error("too many files accepted")
	}
}

func TestCapBuffer(t *testing.T) {
	b := &CapBuffer{Max: 5}
	b.Write([]byte("abc"))
	b.Write([]byte("defg"))
	b.Write([]byte("h"))
	if string(b.Bytes()) != "abcde" || b.Size() != 8 || !b.Truncated() {
		t.Errorf("kept %q of %d, truncated %v", b.Bytes(), b.Size(), b.Truncated())
	}
	b = &CapBuffer{Max: 5}
	b.Write([]byte("abcde"))
	if b.Truncated() {
		t.Error("exactly Max bytes reported as truncated")
	}
}

func TestCheckRefusesNUL(t *testing.T) {
	req := Request{Code: "print('a')\x00import os"}
	if err := req.Check(Limits{}); err != ErrNULInCode {
		t.Errorf("code with a NUL byte: got %v, want ErrNULInCode", err)
	}
	req.Code = `print("\x00")` // an escape in a literal is fine
	if err := req.Check(Limits{}); err != nil {
		t.Errorf("escaped NUL refused: %v", err)
	}
}
