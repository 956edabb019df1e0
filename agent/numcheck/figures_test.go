package numcheck

import "testing"

func TestFigures(t *testing.T) {
	src := Sources{Runs: []Run{{Output: "North 1234\nSouth 987.5\nTotal 2221.5\n"}}}
	answer := "Revenue by region:\n\n| Region | Revenue |\n|---|---|\n| North | $1,234 |\n| South | $987.50 |\n\n- **Total revenue**: $2,221.50\n- Growth was 14.2% this week.\n"
	want := []Figure{
		{Text: "$1,234", Value: 1234, Label: "North", Verified: true},
		{Text: "$987.50", Value: 987.5, Label: "South", Verified: true},
		{Text: "$2,221.50", Value: 2221.5, Label: "Total revenue", Verified: true},
		{Text: "14.2%", Value: 14.2, Label: "Growth was", Verified: false},
	}
	got := Figures(answer, src)
	if len(got) != len(want) {
		t.Fatalf("Figures = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("figure %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestLabelBefore(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"| North | ", "North"},
		{"- **Revenue (EU)**: €", "Revenue (EU)"},
		{"Sign-ups grew to ", "Sign-ups grew to"},
		{"We ran it twice. The mean is ", "The mean is"},
		{"1. Median = ", "Median"},
		{"", ""},
		{"one two three four five six seven eight: ", "three four five six seven eight"},
	} {
		if got := labelBefore(tt.in); got != tt.want {
			t.Errorf("labelBefore(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
