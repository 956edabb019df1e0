package thread

import (
	"strings"
	"testing"
)

func TestTrimHistory(t *testing.T) {
	turns := []Turn{
		{Question: strings.Repeat("a", 100), Answer: "1"},
		{Question: strings.Repeat("b", 100), Answer: "2"},
		{Question: strings.Repeat("c", 100), Answer: "3"},
	}
	got := trimHistory(turns, 210)
	if len(got) != 2 || got[0].Answer != "2" {
		t.Errorf("trimHistory kept %+v, want the newest two", got)
	}
	one := trimHistory([]Turn{{Question: "q", Runs: []Run{{Code: strings.Repeat("x", 1000), Output: strings.Repeat("y", 1000)}}}}, 400)
	if len(one) != 1 || one[0].size() > 400 {
		t.Errorf("single turn not cut to budget: %d", one[0].size())
	}
}
