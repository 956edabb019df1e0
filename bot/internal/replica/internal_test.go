package replica_test

import (
	"testing"

	"github.com/sandpiper-bot/sandpiper/bot/internal/replica"
)

func TestVersionAtLeast(t *testing.T) {
	for _, test := range []struct {
		version string
		want    bool
	}{
		{"7.0.15", true},
		{"6.2.0", true},
		{"6.2", true},
		{"10.0.1", true},
		{"6.0.16", false},
		{"5.0.7", false},
		{"", false},
		{"7", false},
		{"x.y.z", false},
	} {
		if got := replica.VersionAtLeast(test.version, 6, 2); got != test.want {
			t.Errorf("versionAtLeast(%q, 6.2) = %v", test.version, got)
		}
	}
}

func TestCompareIDs(t *testing.T) {
	for _, test := range []struct {
		a, b string
		want int
	}{
		{"1-0", "1-0", 0},
		{"1-0", "1-1", -1},
		{"2-0", "10-0", -1}, // numeric, not lexical
		{"1712345678000-3", "1712345678000-12", -1},
		{"1712345678001-0", "1712345678000-99", 1},
	} {
		if got := replica.CompareIDs(test.a, test.b); got != test.want {
			t.Errorf("compareIDs(%s, %s) = %d; want %d", test.a, test.b, got, test.want)
		}
	}
}
