package fakegw

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestResponsesReasoningIsCarriedBack walks the demo over the Responses wire, handing every
// reasoning item back before the assistant message it came with: each request is recorded with
// all the items of the turns before it.
func TestResponsesReasoningIsCarriedBack(t *testing.T) {
	gw := New(Options{})
	srv := gw.testServer(t)
	w := wires[2]
	ws := newWorkspace(t)
	msgs := []message{{Role: "user", Text: "Make the tests of this module pass."}}
	reasoning := map[int][]json.RawMessage{}
	turns := 0
	for ; turns < 10; turns++ {
		o := w.call(t, srv, "", responsesBodyWith("You fix Go code.", msgs, reasoning))
		if o.Kind != "stream" {
			t.Fatalf("turn %d: %s %d %s", turns+1, o.Kind, o.Status, o.Body)
		}
		if len(o.Stream.Reasoning) != 1 {
			t.Fatalf("turn %d: %d reasoning items, want 1", turns+1, len(o.Stream.Reasoning))
		}
		var item struct {
			ID, Type         string
			EncryptedContent string `json:"encrypted_content"`
		}
		if err := json.Unmarshal(o.Stream.Reasoning[0], &item); err != nil || item.Type != "reasoning" || item.EncryptedContent == "" {
			t.Fatalf("turn %d: reasoning item %s (%v)", turns+1, o.Stream.Reasoning[0], err)
		}
		reasoning[len(msgs)] = o.Stream.Reasoning
		msgs = append(msgs, message{Role: "assistant", Text: o.Stream.Text, Calls: o.Stream.Calls})
		if len(o.Stream.Calls) == 0 {
			break
		}
		for _, c := range o.Stream.Calls {
			msgs = append(msgs, ws.run(c))
		}
	}
	recs := gw.Stats().Records
	if len(recs) != turns+1 || len(recs) < 3 {
		t.Fatalf("%d requests for %d turns", len(recs), turns+1)
	}
	for i, r := range recs {
		if r.Reasoning != i || r.Format != FormatResponses {
			t.Errorf("request %d: carried %d reasoning items (format %s), want %d", i+1, r.Reasoning, r.Format, i)
		}
	}
}

// TestResponsesRefusesBadReasoning: as the real API does, the fake refuses a reasoning item whose
// encrypted content was altered or left out (nothing is stored with store false), or that no item
// follows; and it sends no encrypted content unless the request includes it.
func TestResponsesRefusesBadReasoning(t *testing.T) {
	gw := New(Options{})
	srv := gw.testServer(t)
	w := wires[2]
	first := w.call(t, srv, "", responsesBody("", []message{{Role: "user", Text: "Fix it."}}))
	if first.Kind != "stream" || len(first.Stream.Reasoning) != 1 {
		t.Fatalf("first call: %+v", first)
	}
	good := first.Stream.Reasoning[0]
	var item map[string]any
	if err := json.Unmarshal(good, &item); err != nil {
		t.Fatal(err)
	}
	with := func(k string, v any) json.RawMessage {
		m := map[string]any{}
		for key, val := range item {
			m[key] = val
		}
		m[k] = v
		b, _ := json.Marshal(m)
		return b
	}
	turn := []message{{Role: "user", Text: "Fix it."}, {Role: "assistant", Text: first.Stream.Text, Calls: first.Stream.Calls}, {Role: "tool", CallID: first.Stream.Calls[0].ID, Text: "calc.go"}}
	cases := []struct {
		name      string
		reasoning json.RawMessage
		msgs      []message
		want      string
	}{
		{"altered", with("encrypted_content", "fake-enc:forged"), turn, "could not be verified"},
		{"without its encrypted content", with("encrypted_content", nil), turn, "not persisted"},
		{"with nothing after it", good, []message{{Role: "user", Text: "Fix it."}, {Role: "assistant"}}, "required following item"},
		{"intact", good, turn, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := responsesBodyWith("", c.msgs, map[int][]json.RawMessage{1: {c.reasoning}})
			if c.name == "with nothing after it" {
				body = []byte(strings.Replace(string(body), `,{"content":"","role":"assistant","type":"message"}`, "", 1))
			}
			o := w.call(t, srv, "", body)
			if c.want == "" {
				if o.Kind != "stream" {
					t.Fatalf("intact reasoning refused: %s %d %s", o.Kind, o.Status, o.Body)
				}
				return
			}
			if o.Kind != "http" || o.Status != 400 || !strings.Contains(o.Body, c.want) || !strings.Contains(o.Body, "invalid_request_error") {
				t.Fatalf("got %s %d %s, want 400 invalid_request_error saying %q", o.Kind, o.Status, o.Body, c.want)
			}
		})
	}
	t.Run("not included", func(t *testing.T) {
		body := strings.Replace(string(responsesBody("", []message{{Role: "user", Text: "Fix it."}})), `"include":["reasoning.encrypted_content"],`, "", 1)
		o := w.call(t, srv, "", []byte(body))
		if o.Kind != "stream" || len(o.Stream.Reasoning) != 1 || !strings.Contains(string(o.Stream.Reasoning[0]), `"encrypted_content":null`) {
			t.Fatalf("without include: %+v", o)
		}
	})
}
