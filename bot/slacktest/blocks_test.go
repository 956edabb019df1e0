package slacktest

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// table returns a data_table block of rows × cols raw_text cells holding
// text, as JSON.
func table(rows, cols int, text string) string {
	var rs []string
	for range rows {
		var cs []string
		for range cols {
			cs = append(cs, fmt.Sprintf(`{"type":"raw_text","text":%q}`, text))
		}
		rs = append(rs, "["+strings.Join(cs, ",")+"]")
	}
	return `{"type":"data_table","caption":"t.csv","rows":[` + strings.Join(rs, ",") + `]}`
}

const (
	header = `[{"type":"raw_text","text":"n"},{"type":"raw_text","text":"x"}]`
	row    = `[{"type":"raw_number","value":1},{"type":"raw_number","value":2.5,"text":"2.50"}]`
)

func feedback(positive, negative string) string {
	return `{"type":"context_actions","elements":[{"type":"feedback_buttons","action_id":"feedback","positive_button":` + positive + `,"negative_button":` + negative + `}]}`
}

const (
	good = `{"text":{"type":"plain_text","text":"Good"},"value":"positive"}`
	bad  = `{"text":{"type":"plain_text","text":"Bad"},"value":"negative"}`
)

// TestCheckBlocksAIBlocks: the fake refuses data_table and context_actions
// blocks as Slack does, and takes the ones within its limits.
func TestCheckBlocksAIBlocks(t *testing.T) {
	fb := func(n int) string {
		var els []string
		for i := range n {
			els = append(els, fmt.Sprintf(`{"type":"feedback_buttons","action_id":"f%d","positive_button":%s,"negative_button":%s}`, i, good, bad))
		}
		return `{"type":"context_actions","elements":[` + strings.Join(els, ",") + `]}`
	}
	for _, tc := range []struct {
		name   string
		blocks string
		want   string // "" when Slack takes it, else what its message holds
	}{
		{"table", `{"type":"data_table","caption":"t.csv","page_size":10,"rows":[` + header + `,` + row + `]}`, ""},
		{"table of 101 rows", table(101, 20, "x"), ""},
		{"table of 102 rows", table(102, 2, "x"), "no more than 101 items [json-pointer:/blocks/0/rows]"},
		{"header alone", table(1, 2, "x"), "at least 2 items [json-pointer:/blocks/0/rows]"},
		{"21 columns", table(2, 21, "x"), "no more than 20 items [json-pointer:/blocks/0/rows/0]"},
		{"no caption", `{"type":"data_table","rows":[` + header + `,` + row + `]}`, "missing required field: caption"},
		{"no rows", `{"type":"data_table","caption":"t"}`, "missing required field: rows"},
		{"ragged", `{"type":"data_table","caption":"t","rows":[` + header + `,[{"type":"raw_text","text":"a"}]]}`, "same number of cells [json-pointer:/blocks/0/rows/1]"},
		{"empty text", `{"type":"data_table","caption":"t","rows":[` + header + `,[{"type":"raw_text","text":""},{"type":"raw_text","text":"a"}]]}`, "at least 1 characters [json-pointer:/blocks/0/rows/1/0/text]"},
		{"number without value", `{"type":"data_table","caption":"t","rows":[` + header + `,[{"type":"raw_number","text":"1"},{"type":"raw_text","text":"a"}]]}`, "missing required field: value"},
		{"number as a string", `{"type":"data_table","caption":"t","rows":[` + header + `,[{"type":"raw_number","value":"1"},{"type":"raw_text","text":"a"}]]}`, "missing required field: value"},
		{"number in the header", `{"type":"data_table","caption":"t","rows":[` + row + `,` + row + `]}`, "header row takes only raw_text"},
		{"unknown cell", `{"type":"data_table","caption":"t","rows":[` + header + `,[{"type":"image"},{"type":"raw_text","text":"a"}]]}`, "unsupported cell type"},
		{"page size 0", `{"type":"data_table","caption":"t","page_size":0,"rows":[` + header + `,` + row + `]}`, "between 1 and 100 [json-pointer:/blocks/0/page_size]"},
		{"page size 101", `{"type":"data_table","caption":"t","page_size":101,"rows":[` + header + `,` + row + `]}`, "between 1 and 100"},
		{"10,000 characters", table(100, 10, strings.Repeat("x", 10)), ""},
		{"10,001 characters", table(101, 1, strings.Repeat("x", 99)) + "," + table(2, 1, "x"), "tables of a message must hold no more than 10000"},
		{"a table over 10,000", table(101, 20, strings.Repeat("x", 5)), "cells must hold no more than 10000 characters"},
		{"feedback", feedback(good, bad), ""},
		{"five elements", fb(5), ""},
		{"six elements", fb(6), "no more than 5 items [json-pointer:/blocks/0/elements]"},
		{"no negative button", `{"type":"context_actions","elements":[{"type":"feedback_buttons","positive_button":` + good + `}]}`, "json-pointer:/blocks/0/elements/0/negative_button"},
		{"no value", feedback(good, `{"text":{"type":"plain_text","text":"Bad"}}`), "json-pointer:/blocks/0/elements/0/negative_button/value"},
		{"long value", feedback(good, `{"text":{"type":"plain_text","text":"Bad"},"value":"`+strings.Repeat("v", 2001)+`"}`), "1 to 2000 characters"},
		{"long text", feedback(`{"text":{"type":"plain_text","text":"`+strings.Repeat("g", 76)+`"},"value":"p"}`, bad), "1 to 75 characters [json-pointer:/blocks/0/elements/0/positive_button/text/text]"},
		{"mrkdwn text", feedback(`{"text":{"type":"mrkdwn","text":"Good"},"value":"p"}`, bad), "must be a plain_text object"},
		{"duplicate action_id", `{"type":"context_actions","elements":[{"type":"feedback_buttons","action_id":"f","positive_button":` + good + `,"negative_button":` + bad + `},{"type":"feedback_buttons","action_id":"f","positive_button":` + good + `,"negative_button":` + bad + `}]}`, "duplicate action_id"},
		{"a button", `{"type":"context_actions","elements":[{"type":"button","text":{"type":"plain_text","text":"x"}}]}`, "unsupported type [json-pointer:/blocks/0/elements/0/type]"},
		{"no elements", `{"type":"context_actions","elements":[]}`, "at least 1 items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkBlocks("[" + tc.blocks + "]")
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("refused: %v", got)
			case tc.want == "":
				return
			case got == nil:
				t.Fatalf("taken; want invalid_blocks with %q", tc.want)
			}
			if got["error"] != "invalid_blocks" {
				t.Errorf("error = %v, want invalid_blocks", got["error"])
			}
			msgs, _ := json.Marshal(got["response_metadata"])
			if !strings.Contains(string(msgs), tc.want) {
				t.Errorf("messages %s lack %q", msgs, tc.want)
			}
		})
	}
}
