package slacktest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// View is a modal the bot opened with views.open.
type View struct {
	ID        string
	User      string // who clicked: the trigger's user
	TriggerID string
	// JSON is the view as the bot sent it.
	JSON json.RawMessage
	// CallbackID and PrivateMetadata are the view's.
	CallbackID, PrivateMetadata string
	Blocks                      []map[string]any
}

// Limits of a modal view (Slack's docs for views.open and the view
// object).
const (
	viewTitleChars    = 24
	viewBlocks        = 100
	viewMetadataChars = 3000
	viewLabelChars    = 2000
	triggerTTL        = 3 * time.Second
)

// viewsOpen checks and keeps a modal as Slack would: a trigger issued by
// a click or a slash command, used within 3 seconds and once; a modal
// with a title of at most 24 characters, at most 100 blocks, input
// blocks with a label and one element, and private_metadata of at most
// 3,000 characters.
func (s *Server) viewsOpen(form url.Values) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	trig := form.Get("trigger_id")
	issued, ok := s.triggers[trig]
	switch {
	case !ok:
		return slackErr("invalid_trigger_id")
	case time.Since(issued.at) > triggerTTL:
		return slackErr("expired_trigger_id")
	}
	delete(s.triggers, trig)
	var v struct {
		Type  string `json:"type"`
		Title struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"title"`
		CallbackID      string           `json:"callback_id"`
		PrivateMetadata string           `json:"private_metadata"`
		Blocks          []map[string]any `json:"blocks"`
	}
	raw := form.Get("view")
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return slackErr("invalid_arguments", "view: "+err.Error())
	}
	switch {
	case v.Type != "modal":
		return slackErr("invalid_arguments", "view type must be modal [json-pointer:/view/type]")
	case v.Title.Type != "plain_text" || v.Title.Text == "" || len([]rune(v.Title.Text)) > viewTitleChars:
		return slackErr("invalid_arguments", fmt.Sprintf("title must be plain_text of 1 to %d characters [json-pointer:/view/title]", viewTitleChars))
	case len(v.Blocks) == 0 || len(v.Blocks) > viewBlocks:
		return slackErr("invalid_arguments", fmt.Sprintf("must provide 1 to %d blocks [json-pointer:/view/blocks]", viewBlocks))
	case len([]rune(v.PrivateMetadata)) > viewMetadataChars:
		return slackErr("invalid_arguments", "private_metadata too long [json-pointer:/view/private_metadata]")
	}
	for i, b := range v.Blocks {
		if b["type"] != "input" {
			continue
		}
		label, _ := b["label"].(map[string]any)
		el, _ := b["element"].(map[string]any)
		text, _ := label["text"].(string)
		id, _ := b["block_id"].(string)
		switch {
		case label["type"] != "plain_text" || text == "" || len([]rune(text)) > viewLabelChars:
			return slackErr("invalid_arguments", fmt.Sprintf("missing or bad label [json-pointer:/view/blocks/%d/label]", i))
		case el == nil || el["action_id"] == nil:
			return slackErr("invalid_arguments", fmt.Sprintf("missing element or action_id [json-pointer:/view/blocks/%d/element]", i))
		case id == "":
			return slackErr("invalid_arguments", fmt.Sprintf("the fake needs a block_id [json-pointer:/view/blocks/%d/block_id]", i))
		}
	}
	id := s.nextID("V")
	s.views = append(s.views, View{ID: id, User: issued.user, TriggerID: trig, JSON: json.RawMessage(raw),
		CallbackID: v.CallbackID, PrivateMetadata: v.PrivateMetadata, Blocks: v.Blocks})
	s.cond.Broadcast()
	return map[string]any{"view": map[string]any{"id": id, "type": "modal", "callback_id": v.CallbackID, "private_metadata": v.PrivateMetadata}}
}

// issueTrigger records a trigger_id given to user with an interaction.
// The caller holds s.mu.
func (s *Server) issueTriggerLocked(trig, user string) {
	s.triggers[trig] = trigger{user: user, at: time.Now()}
}

type trigger struct {
	user string
	at   time.Time
}

// Views returns the modals opened so far.
func (s *Server) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]View(nil), s.views...)
}

// WaitView waits for the nth modal (from 1) to be opened.
func (s *Server) WaitView(n int, timeout time.Duration) (View, bool) {
	var v View
	ok := s.Wait(timeout, func() bool {
		if len(s.views) >= n {
			v = s.views[n-1]
			return true
		}
		return false
	})
	return v, ok
}

// SubmitView sends the view_submission of the modal id by its user, with
// the values of its inputs by block_id (each block's element has the
// block's id as its action_id, as the bot's forms do): a plain string
// for a text input, "option:V" for a select's option V, "time:HH:MM" for
// a time picker, "conversation:C" for a conversation select. It returns
// the envelope id; the ack carries the bot's response.
func (s *Server) SubmitView(id string, values map[string]string) (string, error) {
	s.mu.Lock()
	var v *View
	for i := range s.views {
		if s.views[i].ID == id {
			v = &s.views[i]
		}
	}
	if v == nil {
		s.mu.Unlock()
		return "", fmt.Errorf("slacktest: no view %s", id)
	}
	state := map[string]any{}
	for block, val := range values {
		var el map[string]any
		switch {
		case strings.HasPrefix(val, "option:"):
			el = map[string]any{"type": "static_select", "selected_option": map[string]any{"value": strings.TrimPrefix(val, "option:")}}
		case strings.HasPrefix(val, "time:"):
			el = map[string]any{"type": "timepicker", "selected_time": strings.TrimPrefix(val, "time:")}
		case strings.HasPrefix(val, "conversation:"):
			el = map[string]any{"type": "conversations_select", "selected_conversation": strings.TrimPrefix(val, "conversation:")}
		default:
			el = map[string]any{"type": "plain_text_input", "value": val}
		}
		state[block] = map[string]any{block: el}
	}
	env := s.nextID("env-")
	payload := map[string]any{
		"type": "view_submission", "team": map[string]any{"id": TeamID}, "api_app_id": AppID,
		"user": map[string]any{"id": v.User, "team_id": TeamID},
		"view": map[string]any{"id": v.ID, "type": "modal", "callback_id": v.CallbackID, "private_metadata": v.PrivateMetadata,
			"state": map[string]any{"values": state}},
	}
	s.mu.Unlock()
	raw, err := json.Marshal(map[string]any{"envelope_id": env, "type": "interactive", "payload": payload, "accepts_response_payload": true})
	if err != nil {
		return "", err
	}
	return env, s.SendEnvelope(env, raw)
}
