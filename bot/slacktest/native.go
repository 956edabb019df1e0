package slacktest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Slack's documented limits on native charts (the data_visualization
// block), task updates in streams (task_update chunks), loading messages
// and agent sessions, as the fake enforces them.
const (
	chartsPerMessage = 2  // data_visualization blocks in one message
	chartTitle       = 50 // a chart's title, an axis label
	chartLabel       = 20 // a category, a series' name, a pie segment's label
	chartPoints      = 20 // points of a series
	chartSeries      = 6  // series of a chart, segments of a pie
	taskText         = 256
	loadingMessages  = 10
)

// Task is a task a streamed message shows (task_update chunks): the
// latest update of each id, in the order the ids first came.
type Task struct {
	ID, Title, Status, Details, Output string
	Updated                            time.Time // when the latest update arrived
}

// checkDataVisualization checks the data_visualization block at index i.
func checkDataVisualization(i int, b map[string]any) map[string]any {
	ptr := fmt.Sprintf("/blocks/%d", i)
	if e := textField(b, "title", 1, chartTitle, ptr); e != nil {
		return e
	}
	chart, ok := b["chart"].(map[string]any)
	if !ok {
		return blockError("missing required field: chart [json-pointer:%s]", ptr)
	}
	ptr += "/chart"
	if e := onlyKeys(chart, ptr, "type", "segments", "series", "axis_config"); e != nil {
		return e
	}
	switch chart["type"] {
	case "pie":
		segs, ok := chart["segments"].([]any)
		if !ok || len(segs) == 0 || len(segs) > chartSeries {
			return blockError("must provide an array of 1 to %d items [json-pointer:%s/segments]", chartSeries, ptr)
		}
		for j, v := range segs {
			seg, _ := v.(map[string]any)
			sp := fmt.Sprintf("%s/segments/%d", ptr, j)
			if e := textField(seg, "label", 1, chartLabel, sp); e != nil {
				return e
			}
			if n, ok := seg["value"].(float64); !ok || n <= 0 {
				return blockError("must be a number greater than 0 [json-pointer:%s/value]", sp)
			}
		}
		return nil
	case "bar", "line", "area":
	default:
		return blockError("unsupported chart type [json-pointer:%s/type]", ptr)
	}
	axis, ok := chart["axis_config"].(map[string]any)
	if !ok {
		return blockError("missing required field: axis_config [json-pointer:%s]", ptr)
	}
	for _, k := range []string{"x_label", "y_label"} {
		if _, ok := axis[k]; ok {
			if e := textField(axis, k, 0, chartTitle, ptr+"/axis_config"); e != nil {
				return e
			}
		}
	}
	cats, _ := axis["categories"].([]any)
	if len(cats) == 0 {
		return blockError("must provide an array with at least 1 items [json-pointer:%s/axis_config/categories]", ptr)
	}
	catSet := map[string]bool{}
	for j, c := range cats {
		s, _ := c.(string)
		if s == "" || utf8.RuneCountInString(s) > chartLabel || catSet[s] {
			return blockError("must be a unique string of 1 to %d characters [json-pointer:%s/axis_config/categories/%d]", chartLabel, ptr, j)
		}
		catSet[s] = true
	}
	series, _ := chart["series"].([]any)
	if len(series) == 0 || len(series) > chartSeries {
		return blockError("must provide an array of 1 to %d items [json-pointer:%s/series]", chartSeries, ptr)
	}
	names := map[string]bool{}
	for j, v := range series {
		ser, _ := v.(map[string]any)
		sp := fmt.Sprintf("%s/series/%d", ptr, j)
		if e := textField(ser, "name", 1, chartLabel, sp); e != nil {
			return e
		}
		if names[ser["name"].(string)] {
			return blockError("series names must be unique [json-pointer:%s/name]", sp)
		}
		names[ser["name"].(string)] = true
		data, _ := ser["data"].([]any)
		if len(data) == 0 || len(data) > chartPoints || len(data) != len(cats) {
			return blockError("must provide one point for each of the %d categories, at most %d [json-pointer:%s/data]", len(cats), chartPoints, sp)
		}
		seen := map[string]bool{}
		for k, p := range data {
			pt, _ := p.(map[string]any)
			l, _ := pt["label"].(string)
			if !catSet[l] || seen[l] {
				return blockError("must match one category, once [json-pointer:%s/data/%d/label]", sp, k)
			}
			seen[l] = true
			if _, ok := pt["value"].(float64); !ok {
				return blockError("must be a number [json-pointer:%s/data/%d/value]", sp, k)
			}
		}
	}
	return nil
}

// textField checks the string m[k]: between min and max characters, no
// control characters.
func textField(m map[string]any, k string, min, max int, ptr string) map[string]any {
	s, ok := m[k].(string)
	if !ok && min > 0 {
		return blockError("missing required field: %s [json-pointer:%s]", k, ptr)
	}
	if n := utf8.RuneCountInString(s); n < min || n > max {
		return blockError("must be a string of %d to %d characters [json-pointer:%s/%s]", min, max, ptr, k)
	}
	if r, _ := UnsafeRune(s); r >= 0 {
		return blockError("must not hold control characters [json-pointer:%s/%s]", ptr, k)
	}
	return nil
}

// onlyKeys refuses a field Slack does not know.
func onlyKeys(m map[string]any, ptr string, keys ...string) map[string]any {
	for k := range m {
		if !slices.Contains(keys, k) {
			return blockError("unknown field %s [json-pointer:%s/%s]", k, ptr, k)
		}
	}
	return nil
}

// checkTaskUpdate checks a task_update chunk at index i and returns the
// task it shows.
func checkTaskUpdate(i int, c map[string]any) (Task, map[string]any) {
	ptr := fmt.Sprintf("/chunks/%d", i)
	chunkErr := func(format string, args ...any) map[string]any {
		return slackErr("invalid_chunks", fmt.Sprintf(format, args...))
	}
	for k := range c {
		if !slices.Contains([]string{"type", "id", "title", "status", "details", "output", "sources"}, k) {
			return Task{}, chunkErr("unknown field %s [json-pointer:%s/%s]", k, ptr, k)
		}
	}
	var t Task
	for _, f := range []struct {
		k   string
		to  *string
		min int
	}{{"id", &t.ID, 1}, {"title", &t.Title, 1}, {"status", &t.Status, 1}, {"details", &t.Details, 0}, {"output", &t.Output, 0}} {
		v, present := c[f.k]
		s, ok := v.(string)
		switch {
		case !present && f.min > 0:
			return Task{}, chunkErr("missing required field: %s [json-pointer:%s]", f.k, ptr)
		case present && !ok:
			return Task{}, chunkErr("must be a string [json-pointer:%s/%s]", ptr, f.k)
		case utf8.RuneCountInString(s) < f.min || utf8.RuneCountInString(s) > taskText:
			return Task{}, chunkErr("must be a string of %d to %d characters [json-pointer:%s/%s]", f.min, taskText, ptr, f.k)
		}
		if r, _ := UnsafeRune(s); r >= 0 {
			return Task{}, chunkErr("must not hold control characters [json-pointer:%s/%s]", ptr, f.k)
		}
		*f.to = s
	}
	if !slices.Contains([]string{"pending", "in_progress", "complete", "error"}, t.Status) {
		return Task{}, chunkErr("status must be pending, in_progress, complete or error [json-pointer:%s/status]", ptr)
	}
	t.Updated = time.Now()
	return t, nil
}

// addTasks shows tasks in m: an update replaces the task of its id.
func addTasks(m *Message, tasks []Task) {
	for _, t := range tasks {
		if i := slices.IndexFunc(m.Tasks, func(x Task) bool { return x.ID == t.ID }); i >= 0 {
			m.Tasks[i] = t
		} else {
			m.Tasks = append(m.Tasks, t)
		}
	}
}

// checkLoadingMessages checks assistant.threads.setStatus's
// loading_messages, which slack-go sends joined by commas.
func checkLoadingMessages(form url.Values) ([]string, map[string]any) {
	raw, ok := form["loading_messages"]
	if !ok {
		return nil, nil
	}
	msgs := strings.Split(strings.Join(raw, ","), ",")
	if len(msgs) > loadingMessages {
		return nil, slackErr("invalid_arguments", fmt.Sprintf("loading_messages holds at most %d messages", loadingMessages))
	}
	for _, m := range msgs {
		if strings.TrimSpace(m) == "" {
			return nil, slackErr("invalid_arguments", "a loading message is empty (one with a comma is cut in two)")
		}
	}
	return msgs, nil
}

// setSessionStatus is agents.sessions.setStatus: the status of the agent
// session of a thread, which shows Slack's own stop control while it is
// processing.
func (s *Server) setSessionStatus(form url.Values) map[string]any {
	status, channel, thread := form.Get("status"), form.Get("channel_id"), form.Get("thread_ts")
	if !slices.Contains([]string{"active", "processing", "suspended", "closed"}, status) {
		return slackErr("invalid_arguments", "status must be active, processing, suspended or closed")
	}
	if channel == "" || thread == "" {
		return slackErr("invalid_arguments", "channel_id and thread_ts are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.needScopeLocked("chat:write"); e != nil {
		return e
	}
	if s.findLocked(channel, thread) == nil {
		return slackErr("thread_not_found")
	}
	k := channel + "/" + thread
	s.sessions[k] = append(s.sessions[k], status)
	return map[string]any{"status": status, "agent_status": status}
}

// SessionStatuses returns the statuses the bot gave the agent session of
// a thread, in order.
func (s *Server) SessionStatuses(channel, threadTS string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sessions[channel+"/"+threadTS])
}

// LoadingMessages returns the loading messages of a thread's latest
// status.
func (s *Server) LoadingMessages(channel, threadTS string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.loading[channel+"/"+threadTS])
}

// ChartBlocks returns the data_visualization blocks of a message.
func (m Message) ChartBlocks() []map[string]any {
	var blocks []map[string]any
	_ = json.Unmarshal(m.Blocks, &blocks)
	var out []map[string]any
	for _, b := range blocks {
		if b["type"] == "data_visualization" {
			out = append(out, b)
		}
	}
	return out
}
