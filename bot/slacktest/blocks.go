package slacktest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Slack's limits on the blocks of AI answers (docs.slack.dev: the data
// table block, the context actions block, the feedback buttons element).
// Where published sources disagree the fake takes the strictest.
const (
	tableMinRows    = 2     // a header and one row
	tableMaxRows    = 101   // 100 rows and the header; one client library says 201
	tableMaxColumns = 20    // and at least 1
	tableMaxChars   = 10000 // across the cells of a table, and of a message
	tableMaxPage    = 100   // page_size is 1–100
	contextActions  = 5     // elements of a context_actions block
	feedbackText    = 75    // a feedback button's text and accessibility label
	feedbackValue   = 2000  // a feedback button's value
	actionIDChars   = 255
)

// blockError is Slack's answer to a block it refuses: invalid_blocks with
// what is wrong and where, as response_metadata.messages.
func blockError(format string, args ...any) map[string]any {
	return slackErr("invalid_blocks", fmt.Sprintf(format, args...))
}

// checkDataTable checks the data_table block at index i and returns
// Slack's error, or the characters its cells hold.
func checkDataTable(i int, b map[string]any) (map[string]any, int) {
	ptr := fmt.Sprintf("/blocks/%d", i)
	if _, ok := b["caption"].(string); !ok {
		return blockError("missing required field: caption [json-pointer:%s]", ptr), 0
	}
	if v, ok := b["page_size"]; ok {
		if n, ok := v.(float64); !ok || n != float64(int(n)) || n < 1 || n > tableMaxPage {
			return blockError("must be an integer between 1 and %d [json-pointer:%s/page_size]", tableMaxPage, ptr), 0
		}
	}
	if v, ok := b["row_header_column_index"]; ok {
		if n, ok := v.(float64); !ok || n != float64(int(n)) || n < 0 {
			return blockError("must be a non-negative integer [json-pointer:%s/row_header_column_index]", ptr), 0
		}
	}
	rows, ok := b["rows"].([]any)
	switch {
	case !ok:
		return blockError("missing required field: rows [json-pointer:%s]", ptr), 0
	case len(rows) < tableMinRows:
		return blockError("must provide an array with at least %d items [json-pointer:%s/rows]", tableMinRows, ptr), 0
	case len(rows) > tableMaxRows:
		return blockError("must provide an array with no more than %d items [json-pointer:%s/rows]", tableMaxRows, ptr), 0
	}
	chars, width := 0, 0
	for r, row := range rows {
		cells, ok := row.([]any)
		rp := fmt.Sprintf("%s/rows/%d", ptr, r)
		switch {
		case !ok:
			return blockError("must be an array [json-pointer:%s]", rp), 0
		case len(cells) == 0:
			return blockError("must provide an array with at least 1 items [json-pointer:%s]", rp), 0
		case len(cells) > tableMaxColumns:
			return blockError("must provide an array with no more than %d items [json-pointer:%s]", tableMaxColumns, rp), 0
		case r == 0:
			width = len(cells)
		case len(cells) != width:
			return blockError("all rows must have the same number of cells [json-pointer:%s]", rp), 0
		}
		for c, cell := range cells {
			n, e := checkTableCell(cell, r == 0, fmt.Sprintf("%s/%d", rp, c))
			if e != nil {
				return e, 0
			}
			chars += n
		}
	}
	if chars > tableMaxChars {
		return blockError("the cells must hold no more than %d characters [json-pointer:%s/rows]", tableMaxChars, ptr), 0
	}
	return nil, chars
}

// checkTableCell checks one cell and returns its characters.
func checkTableCell(v any, header bool, ptr string) (int, map[string]any) {
	cell, ok := v.(map[string]any)
	if !ok {
		return 0, blockError("must be an object [json-pointer:%s]", ptr)
	}
	text, hasText := cell["text"].(string)
	if _, present := cell["text"]; present && (!hasText || text == "") {
		return 0, blockError("must be a string of at least 1 characters [json-pointer:%s/text]", ptr)
	}
	if header && cell["type"] != "raw_text" {
		// Slack's reference forbids rich_text there; slack-go says
		// raw_text only: the fake takes the stricter.
		return 0, blockError("the header row takes only raw_text cells [json-pointer:%s/type]", ptr)
	}
	switch cell["type"] {
	case "raw_text":
		if !hasText {
			return 0, blockError("missing required field: text [json-pointer:%s]", ptr)
		}
		return utf8.RuneCountInString(text), nil
	case "raw_number":
		n, ok := cell["value"].(float64)
		if !ok {
			return 0, blockError("missing required field: value [json-pointer:%s]", ptr)
		}
		if hasText {
			return utf8.RuneCountInString(text), nil
		}
		return len(strconv.FormatFloat(n, 'f', -1, 64)), nil
	case "rich_text", "action_cell":
		n := 0
		walkStrings(cell, func(s string) { n += utf8.RuneCountInString(s) })
		return n, nil
	default:
		return 0, blockError("unsupported cell type [json-pointer:%s/type]", ptr)
	}
}

// checkContextActions checks the context_actions block at index i.
func checkContextActions(i int, b map[string]any) map[string]any {
	ptr := fmt.Sprintf("/blocks/%d/elements", i)
	els, ok := b["elements"].([]any)
	switch {
	case !ok:
		return blockError("missing required field: elements [json-pointer:/blocks/%d]", i)
	case len(els) == 0:
		return blockError("must provide an array with at least 1 items [json-pointer:%s]", ptr)
	case len(els) > contextActions:
		return blockError("must provide an array with no more than %d items [json-pointer:%s]", contextActions, ptr)
	}
	ids := map[string]bool{}
	for j, v := range els {
		el, _ := v.(map[string]any)
		ep := fmt.Sprintf("%s/%d", ptr, j)
		if id, ok := el["action_id"]; ok {
			s, _ := id.(string)
			switch {
			case s == "" || utf8.RuneCountInString(s) > actionIDChars:
				return blockError("must be a string of 1 to %d characters [json-pointer:%s/action_id]", actionIDChars, ep)
			case ids[s]:
				return blockError("duplicate action_id [json-pointer:%s/action_id]", ep)
			}
			ids[s] = true
		}
		switch el["type"] {
		case "feedback_buttons":
			for _, k := range []string{"positive_button", "negative_button"} {
				if e := checkFeedbackButton(el[k], ep+"/"+k); e != nil {
					return e
				}
			}
		case "icon_button":
			if s, _ := el["icon"].(string); s == "" {
				return blockError("missing required field: icon [json-pointer:%s]", ep)
			}
			if e := checkPlainText(el["text"], feedbackText, ep+"/text"); e != nil {
				return e
			}
		default:
			return blockError("unsupported type [json-pointer:%s/type]", ep)
		}
	}
	return nil
}

func checkFeedbackButton(v any, ptr string) map[string]any {
	btn, ok := v.(map[string]any)
	if !ok {
		return blockError("missing required field [json-pointer:%s]", ptr)
	}
	if e := checkPlainText(btn["text"], feedbackText, ptr+"/text"); e != nil {
		return e
	}
	value, ok := btn["value"].(string)
	if !ok || value == "" || utf8.RuneCountInString(value) > feedbackValue {
		return blockError("must be a string of 1 to %d characters [json-pointer:%s/value]", feedbackValue, ptr)
	}
	if l, ok := btn["accessibility_label"]; ok {
		if s, _ := l.(string); s == "" || utf8.RuneCountInString(s) > feedbackText {
			return blockError("must be a string of 1 to %d characters [json-pointer:%s/accessibility_label]", feedbackText, ptr)
		}
	}
	return nil
}

// checkPlainText checks a plain_text object of at most limit characters.
func checkPlainText(v any, limit int, ptr string) map[string]any {
	t, ok := v.(map[string]any)
	if !ok {
		return blockError("missing required field [json-pointer:%s]", ptr)
	}
	if t["type"] != "plain_text" {
		return blockError("must be a plain_text object [json-pointer:%s/type]", ptr)
	}
	s, _ := t["text"].(string)
	if s == "" || utf8.RuneCountInString(s) > limit {
		return blockError("must be a string of 1 to %d characters [json-pointer:%s/text]", limit, ptr)
	}
	return nil
}

// tableText renders a data_table as a reader sees it: its caption, then a
// line a row, cells separated by " | " (a number as its text, or its
// value).
func tableText(b map[string]any) string {
	var sb strings.Builder
	sb.WriteString(fmt.Sprint(b["caption"]) + "\n")
	rows, _ := b["rows"].([]any)
	for _, row := range rows {
		cells, _ := row.([]any)
		for j, c := range cells {
			if j > 0 {
				sb.WriteString(" | ")
			}
			cell, _ := c.(map[string]any)
			switch t, ok := cell["text"].(string); {
			case ok:
				sb.WriteString(t)
			case cell["value"] != nil:
				v, _ := cell["value"].(float64)
				sb.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
			default:
				walkStrings(cell, func(s string) { sb.WriteString(s) })
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}
