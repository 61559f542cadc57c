package fakegw

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// This file is a small client of every wire format, written from the providers' documented
// shapes, so the tests drive the fake over real HTTP without any provider SDK.

// wireCase names a wire format and how to call it.
type wireCase struct {
	name string
	path string
	// body encodes a conversation as this format's request.
	body func(system string, msgs []message) []byte
	// decode reads a response stream.
	decode func(events []sseEvent) (streamed, error)
}

var wires = []wireCase{
	{name: "openai", path: "/v1/chat/completions", body: openAIBody, decode: decodeOpenAI},
	{name: "anthropic", path: "/v1/messages", body: anthropicBody, decode: decodeAnthropic},
	{name: FormatResponses, path: "/v1/responses", body: responsesBody, decode: decodeResponses},
}

// streamed is what a client made of a response stream.
type streamed struct {
	Text    string
	Deltas  int
	Refusal string
	Calls   []call
	// Stop is finish_reason or stop_reason; Complete means the terminator arrived.
	Stop     string
	Complete bool
	Usage    contract.Usage
	// Reasoning are the reasoning items of a Responses stream, as output_item.done sent them.
	Reasoning []json.RawMessage
}

// sseEvent is one server-sent event.
type sseEvent struct {
	Name string
	Data string
}

// readSSE reads events until the body ends; a read error (a cut connection) is returned with
// the events that arrived before it.
func readSSE(r io.Reader) ([]sseEvent, error) {
	var out []sseEvent
	var cur sseEvent
	var data []string
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if len(data) > 0 {
				cur.Data = strings.Join(data, "\n")
				out = append(out, cur)
			}
			cur, data = sseEvent{}, nil
		case strings.HasPrefix(line, "event:"):
			cur.Name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data = append(data, strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " "))
		}
	}
	return out, sc.Err()
}

func openAIBody(system string, msgs []message) []byte {
	var out []map[string]any
	if system != "" {
		out = append(out, map[string]any{"role": "system", "content": system})
	}
	for _, m := range msgs {
		switch m.Role {
		case "tool":
			out = append(out, map[string]any{"role": "tool", "tool_call_id": m.CallID, "content": m.Text})
		case "assistant":
			am := map[string]any{"role": "assistant", "content": m.Text}
			var calls []map[string]any
			for _, c := range m.Calls {
				calls = append(calls, map[string]any{"id": c.ID, "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": c.Args}})
			}
			if calls != nil {
				am["tool_calls"] = calls
			}
			out = append(out, am)
		default:
			out = append(out, map[string]any{"role": m.Role, "content": []any{map[string]any{"type": "text", "text": m.Text}}})
		}
	}
	b, _ := json.Marshal(map[string]any{"model": "gw-model", "messages": out, "stream": true,
		"stream_options": map[string]any{"include_usage": true}})
	return b
}

func anthropicBody(system string, msgs []message) []byte {
	var out []map[string]any
	var pending []any // tool_result blocks waiting for their user message
	flush := func() {
		if pending != nil {
			out = append(out, map[string]any{"role": "user", "content": pending})
			pending = nil
		}
	}
	for _, m := range msgs {
		switch m.Role {
		case "tool":
			pending = append(pending, map[string]any{"type": "tool_result", "tool_use_id": m.CallID, "content": m.Text, "is_error": m.IsError})
		case "assistant":
			flush()
			var blocks []any
			if m.Text != "" {
				blocks = append(blocks, map[string]any{"type": "text", "text": m.Text})
			}
			for _, c := range m.Calls {
				var input any = json.RawMessage(c.Args)
				if !json.Valid([]byte(c.Args)) {
					input = map[string]any{}
				}
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
			}
			out = append(out, map[string]any{"role": "assistant", "content": blocks})
		default:
			if pending != nil {
				pending = append(pending, map[string]any{"type": "text", "text": m.Text})
				flush()
				continue
			}
			out = append(out, map[string]any{"role": m.Role, "content": m.Text})
		}
	}
	flush()
	req := map[string]any{"model": "gw-model", "max_tokens": 1024, "messages": out, "stream": true}
	if system != "" {
		req["system"] = []any{map[string]any{"type": "text", "text": system}}
	}
	b, _ := json.Marshal(req)
	return b
}

func decodeOpenAI(events []sseEvent) (streamed, error) {
	var s streamed
	byIndex := map[int]*call{}
	var order []int
	for _, e := range events {
		if e.Data == "[DONE]" {
			s.Complete = true
			continue
		}
		var c struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					Refusal   *string `json:"refusal"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     int64 `json:"prompt_tokens"`
				CompletionTokens int64 `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e.Data), &c); err != nil {
			return s, fmt.Errorf("chunk %q: %w", e.Data, err)
		}
		if c.Object != "chat.completion.chunk" || c.ID == "" {
			return s, fmt.Errorf("chunk without id or object: %s", e.Data)
		}
		if c.Usage != nil {
			s.Usage = contract.Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
		}
		for _, ch := range c.Choices {
			if d := ch.Delta.Content; d != nil && *d != "" {
				s.Text += *d
				s.Deltas++
			}
			if d := ch.Delta.Refusal; d != nil {
				s.Refusal += *d
			}
			for _, tc := range ch.Delta.ToolCalls {
				cl, ok := byIndex[tc.Index]
				if !ok {
					cl = &call{}
					byIndex[tc.Index] = cl
					order = append(order, tc.Index)
				}
				if tc.ID != "" {
					cl.ID = tc.ID
				}
				cl.Name += tc.Function.Name
				cl.Args += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				s.Stop = *ch.FinishReason
			}
		}
	}
	for _, i := range order {
		s.Calls = append(s.Calls, *byIndex[i])
	}
	return s, nil
}

func decodeAnthropic(events []sseEvent) (streamed, error) {
	var s streamed
	blocks := map[int]*call{}
	var order []int
	for _, e := range events {
		var ev struct {
			Type    string `json:"type"`
			Index   int    `json:"index"`
			Message struct {
				Usage struct {
					InputTokens int64 `json:"input_tokens"`
				} `json:"usage"`
			} `json:"message"`
			ContentBlock struct {
				Type string `json:"type"`
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"content_block"`
			Delta struct {
				Type        string `json:"type"`
				Text        string `json:"text"`
				PartialJSON string `json:"partial_json"`
				StopReason  string `json:"stop_reason"`
			} `json:"delta"`
			Usage struct {
				OutputTokens int64 `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e.Data), &ev); err != nil {
			return s, fmt.Errorf("event %s %q: %w", e.Name, e.Data, err)
		}
		if ev.Type != e.Name {
			return s, fmt.Errorf("event name %q carries type %q", e.Name, ev.Type)
		}
		switch ev.Type {
		case "message_start":
			s.Usage.InputTokens = ev.Message.Usage.InputTokens
		case "content_block_start":
			if ev.ContentBlock.Type == "tool_use" {
				blocks[ev.Index] = &call{ID: ev.ContentBlock.ID, Name: ev.ContentBlock.Name}
				order = append(order, ev.Index)
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				s.Text += ev.Delta.Text
				s.Deltas++
			case "input_json_delta":
				blocks[ev.Index].Args += ev.Delta.PartialJSON
			}
		case "message_delta":
			s.Stop = ev.Delta.StopReason
			s.Usage.OutputTokens = ev.Usage.OutputTokens
		case "message_stop":
			s.Complete = true
		}
	}
	for _, i := range order {
		s.Calls = append(s.Calls, *blocks[i])
	}
	return s, nil
}

// outcome is what one request looked like from the client's side.
type outcome struct {
	// Kind is "hangup", "http", "cut", "malformed" or "stream".
	Kind       string
	Status     int
	RetryAfter string
	Body       string
	Stream     streamed
}

// call posts a request and classifies what came back.
func (w wireCase) call(t *testing.T, srv *httptest.Server, mode string, body []byte) outcome {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+w.path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if mode != "" {
		req.Header.Set(ModeHeader, mode)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return outcome{Kind: "hangup", Body: err.Error()}
	}
	defer resp.Body.Close()
	o := outcome{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		o.Kind, o.Body = "http", string(b)
		return o
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q, want text/event-stream", ct)
	}
	events, readErr := readSSE(resp.Body)
	s, decErr := w.decode(events)
	o.Stream = s
	switch {
	case decErr != nil:
		o.Kind, o.Body = "malformed", decErr.Error()
	case readErr != nil:
		if !errors.Is(readErr, io.ErrUnexpectedEOF) {
			t.Fatalf("cut stream ended with %v, want unexpected EOF", readErr)
		}
		o.Kind = "cut"
	case !s.Complete:
		t.Fatalf("stream ended cleanly without its terminator: %+v", s)
	default:
		o.Kind = "stream"
	}
	return o
}

// postStream posts a streaming request bound to ctx and returns the open response.
func postStream(t *testing.T, ctx context.Context, url, mode string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(ModeHeader, mode)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	return resp
}

// readEvents reads exactly n events from an open stream.
func readEvents(t *testing.T, resp *http.Response, n int) []sseEvent {
	t.Helper()
	var out []sseEvent
	br := bufio.NewReader(resp.Body)
	var data []string
	for len(out) < n {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading event %d: %v", len(out)+1, err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && data != nil:
			out = append(out, sseEvent{Data: strings.Join(data, "\n")})
			data = nil
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	return out
}

// responsesBody encodes a conversation as a Responses request (stateless, with the encrypted
// reasoning asked for); reasoning, when given, goes before the assistant message of that index.
func responsesBody(system string, msgs []message) []byte {
	return responsesBodyWith(system, msgs, nil)
}

func responsesBodyWith(system string, msgs []message, reasoning map[int][]json.RawMessage) []byte {
	var in []any
	for i, m := range msgs {
		switch m.Role {
		case "tool":
			in = append(in, map[string]any{"type": "function_call_output", "call_id": m.CallID, "output": m.Text})
		case "assistant":
			for _, r := range reasoning[i] {
				in = append(in, r)
			}
			if m.Text != "" || len(m.Calls) == 0 {
				in = append(in, map[string]any{"type": "message", "role": "assistant", "content": m.Text})
			}
			for _, c := range m.Calls {
				in = append(in, map[string]any{"type": "function_call", "call_id": c.ID, "name": c.Name, "arguments": c.Args})
			}
		default:
			in = append(in, map[string]any{"type": "message", "role": m.Role, "content": []any{map[string]any{"type": "input_text", "text": m.Text}}})
		}
	}
	req := map[string]any{"model": "gw-model", "input": in, "stream": true, "store": false, "include": []string{"reasoning.encrypted_content"}}
	if system != "" {
		req["instructions"] = system
	}
	b, _ := json.Marshal(req)
	return b
}

func decodeResponses(events []sseEvent) (streamed, error) {
	var s streamed
	calls := map[int]*call{}
	var order []int
	for _, e := range events {
		var ev struct {
			Type        string          `json:"type"`
			OutputIndex int             `json:"output_index"`
			Delta       string          `json:"delta"`
			Item        json.RawMessage `json:"item"`
			Response    struct {
				Status string `json:"status"`
				Usage  *struct {
					InputTokens        int64 `json:"input_tokens"`
					OutputTokens       int64 `json:"output_tokens"`
					InputTokensDetails struct {
						CachedTokens int64 `json:"cached_tokens"`
					} `json:"input_tokens_details"`
				} `json:"usage"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(e.Data), &ev); err != nil {
			return s, fmt.Errorf("event %s %q: %w", e.Name, e.Data, err)
		}
		if ev.Type != e.Name {
			return s, fmt.Errorf("event name %q carries type %q", e.Name, ev.Type)
		}
		var item struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
			Name   string `json:"name"`
		}
		if len(ev.Item) > 0 {
			if err := json.Unmarshal(ev.Item, &item); err != nil {
				return s, fmt.Errorf("item %q: %w", ev.Item, err)
			}
		}
		switch ev.Type {
		case "response.output_item.added":
			if item.Type == "function_call" {
				calls[ev.OutputIndex] = &call{ID: item.CallID, Name: item.Name}
				order = append(order, ev.OutputIndex)
			}
		case "response.output_item.done":
			if item.Type == "reasoning" {
				s.Reasoning = append(s.Reasoning, ev.Item)
			}
		case "response.output_text.delta":
			s.Text += ev.Delta
			s.Deltas++
		case "response.refusal.delta":
			s.Refusal += ev.Delta
		case "response.function_call_arguments.delta":
			calls[ev.OutputIndex].Args += ev.Delta
		case "response.completed":
			s.Complete, s.Stop = true, ev.Response.Status
			if u := ev.Response.Usage; u != nil {
				s.Usage = contract.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.InputTokensDetails.CachedTokens}
			}
		}
	}
	if s.Refusal != "" {
		s.Stop = "refusal"
	}
	for _, i := range order {
		s.Calls = append(s.Calls, *calls[i])
	}
	return s, nil
}
