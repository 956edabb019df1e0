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

// TestMessagesKeepQueries: an earlier turn's query comes back to the
// model as the runSQL call it made and the result it read, in order with
// the turn's runs of code.
func TestMessagesKeepQueries(t *testing.T) {
	turns := []Turn{{Question: "sales by region?", Answer: "north leads", Runs: []Run{
		{Source: "warehouse", SQL: "SELECT region, sum(total) FROM sales GROUP BY 1", Output: `{"source":"warehouse","rows":2,"file":"/mnt/data/by_region.csv"}`},
		{Code: "print(2)", Output: "2\n"},
	}}}
	msgs, _, _ := Messages(t.Context(), turns, "chart it", nil, nil)
	if len(msgs) != 5 {
		t.Fatalf("%d messages, want question, calls, results, answer, question", len(msgs))
	}
	calls, results := msgs[1].ToolCalls, msgs[2].ToolResults
	if len(calls) != 2 || calls[0].Name != "runSQL" || calls[1].Name != "executeCode" {
		t.Fatalf("calls %+v", calls)
	}
	if got := string(calls[0].Input); got != `{"source":"warehouse","sql":"SELECT region, sum(total) FROM sales GROUP BY 1"}` {
		t.Errorf("the query's input is %s", got)
	}
	if results[0].Name != "runSQL" || !strings.Contains(results[0].Content, "/mnt/data/by_region.csv") {
		t.Errorf("the query's result is %+v", results[0])
	}
}
