package gateway

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// rsEvent is one event of a Responses stream.
type rsEvent struct{ name, data string }

// rs builds an event whose data has the event's type and the given fields.
func rs(typ string, fields map[string]any) rsEvent {
	m := map[string]any{"type": typ, "sequence_number": 1}
	for k, v := range fields {
		m[k] = v
	}
	return rsEvent{typ, mustJSON(m)}
}

// rsResponse is a response object with a status and extra fields.
func rsResponse(status string, fields map[string]any) map[string]any {
	m := map[string]any{"id": "resp_1", "object": "response", "created_at": 1, "model": "gw-model", "status": status, "output": []any{},
		"error": nil, "incomplete_details": nil}
	for k, v := range fields {
		m[k] = v
	}
	return m
}

func rsCreated() rsEvent {
	return rs("response.created", map[string]any{"response": rsResponse("in_progress", map[string]any{"usage": nil})})
}

func rsAdded(i int, item any) rsEvent {
	return rs("response.output_item.added", map[string]any{"output_index": i, "item": item})
}

func rsDone(i int, item any) rsEvent {
	return rs("response.output_item.done", map[string]any{"output_index": i, "item": item})
}

func rsText(i int, s string) rsEvent {
	return rs("response.output_text.delta", map[string]any{"output_index": i, "item_id": "msg_1", "content_index": 0, "delta": s})
}

func rsArgs(i int, s string) rsEvent {
	return rs("response.function_call_arguments.delta", map[string]any{"output_index": i, "item_id": "fc_1", "delta": s})
}

func rsUsage(in, out, cached int) map[string]any {
	return map[string]any{"input_tokens": in, "output_tokens": out, "total_tokens": in + out,
		"input_tokens_details": map[string]any{"cached_tokens": cached}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
}

func rsCompleted(in, out, cached int) rsEvent {
	return rs("response.completed", map[string]any{"response": rsResponse("completed", map[string]any{"usage": rsUsage(in, out, cached)})})
}

func rsIncomplete(reason string) rsEvent {
	return rs("response.incomplete", map[string]any{"response": rsResponse("incomplete", map[string]any{
		"usage": rsUsage(10, 4, 0), "incomplete_details": map[string]any{"reason": reason}})})
}

func rsFailed(code, msg string) rsEvent {
	return rs("response.failed", map[string]any{"response": rsResponse("failed", map[string]any{
		"usage": nil, "error": map[string]any{"code": code, "message": msg}})})
}

func rsError(code, msg string) rsEvent {
	return rs("error", map[string]any{"code": code, "message": msg, "param": nil})
}

func rsMessage(text string) map[string]any {
	content := []any{}
	if text != "" {
		content = append(content, map[string]any{"type": "output_text", "text": text, "annotations": []any{}})
	}
	return map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "status": "completed", "content": content}
}

func rsCall(args string) map[string]any {
	return map[string]any{"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_1", "name": "read_file", "arguments": args}
}

// rsReasoning is a reasoning item as the API sends it with include reasoning.encrypted_content.
const rsReasoning = `{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"Look at a.go first."}],"encrypted_content":"gAAAAB-opaque=="}`

// rsOK is a complete stream that says text.
func rsOK(text string) []rsEvent {
	return []rsEvent{rsCreated(), rsAdded(0, rsMessage("")), rsText(0, text), rsDone(0, rsMessage(text)), rsCompleted(3, 1, 0)}
}

// rsStream answers with the events as an event stream.
func rsStream(events ...rsEvent) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		startSSE(w)
		for _, e := range events {
			send(w, e.name, e.data)
		}
	}
}

// rsCut sends the events and then drops the connection.
func rsCut(events ...rsEvent) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rsStream(events...)(w, r)
		cut()
	}
}

func TestResponsesHappyPath(t *testing.T) {
	g := newGW(t, ProviderOpenAIResponses, rsStream(
		rsCreated(), rs("response.in_progress", map[string]any{"response": rsResponse("in_progress", nil)}),
		rsAdded(0, map[string]any{"id": "rs_1", "type": "reasoning", "summary": []any{}}),
		rs("response.reasoning_summary_text.delta", map[string]any{"output_index": 0, "item_id": "rs_1", "summary_index": 0, "delta": "Look"}),
		rsDone(0, json.RawMessage(rsReasoning)),
		rsAdded(1, rsMessage("")), rsText(1, "Hel"), rsText(1, "lo"), rsText(1, " world"), rsDone(1, rsMessage("Hello world")),
		rsAdded(2, rsCall("")), rsArgs(2, `{"pa`), rsArgs(2, `th": "a`), rsArgs(2, `.go"}`),
		rs("response.function_call_arguments.done", map[string]any{"output_index": 2, "item_id": "fc_1", "arguments": `{"path": "a.go"}`}),
		rsDone(2, rsCall(`{"path": "a.go"}`)),
		rsCompleted(1200, 7, 1024),
	))
	res, deltas, err := stream(t, g.client(t), testRequest())
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if want := []string{"Hel", "lo", " world"}; !reflect.DeepEqual(deltas, want) {
		t.Errorf("deltas = %q, want %q", deltas, want)
	}
	want := Response{
		Message: contract.Message{Role: contract.RoleAssistant, Content: "Hello world", ToolCalls: []contract.ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: `{"path": "a.go"}`},
		}, Reasoning: []json.RawMessage{json.RawMessage(rsReasoning)}},
		Usage:      contract.Usage{InputTokens: 1200, OutputTokens: 7, CachedTokens: 1024},
		StopReason: "completed",
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("response = %+v\nwant       %+v", res, want)
	}
}

// TestResponsesDecoding covers replies whose pieces come in other shapes: arguments only in the
// done events, text only in the done item, no reasoning at all, a reply cut by max_output_tokens.
func TestResponsesDecoding(t *testing.T) {
	cases := []struct {
		name   string
		events []rsEvent
		want   contract.Message
		stop   string
	}{
		{"arguments only in the done event", []rsEvent{rsCreated(), rsAdded(0, rsCall("")),
			rs("response.function_call_arguments.done", map[string]any{"output_index": 0, "item_id": "fc_1", "arguments": `{"path":"b.go"}`}),
			rsDone(0, rsCall(`{"path":"b.go"}`)), rsCompleted(1, 1, 0)},
			contract.Message{Role: contract.RoleAssistant, ToolCalls: []contract.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"b.go"}`}}}, "completed"},
		{"arguments only in the done item", []rsEvent{rsCreated(), rsAdded(0, rsCall("")), rsDone(0, rsCall(`{"path" : "c.go"}`)), rsCompleted(1, 1, 0)},
			contract.Message{Role: contract.RoleAssistant, ToolCalls: []contract.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path" : "c.go"}`}}}, "completed"},
		{"malformed arguments kept as sent", []rsEvent{rsCreated(), rsAdded(0, rsCall("")), rsArgs(0, `{"path": "a.g`), rsDone(0, rsCall(`{"path": "a.g`)), rsCompleted(1, 1, 0)},
			contract.Message{Role: contract.RoleAssistant, ToolCalls: []contract.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path": "a.g`}}}, "completed"},
		{"text only in the done item", []rsEvent{rsCreated(), rsAdded(0, rsMessage("")), rsDone(0, rsMessage("quiet")), rsCompleted(1, 1, 0)},
			contract.Message{Role: contract.RoleAssistant, Content: "quiet"}, "completed"},
		{"cut by max_output_tokens", []rsEvent{rsCreated(), rsAdded(0, rsMessage("")), rsText(0, "I will"), rsIncomplete("max_output_tokens")},
			contract.Message{Role: contract.RoleAssistant, Content: "I will"}, "max_output_tokens"},
		{"an item type Keel does not use", []rsEvent{rsCreated(), rsAdded(0, map[string]any{"id": "ws_1", "type": "web_search_call", "status": "completed"}),
			rsDone(0, map[string]any{"id": "ws_1", "type": "web_search_call", "status": "completed"}), rsAdded(1, rsMessage("")), rsText(1, "ok"), rsCompleted(1, 1, 0)},
			contract.Message{Role: contract.RoleAssistant, Content: "ok"}, "completed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGW(t, ProviderOpenAIResponses, rsStream(c.events...))
			res, _, err := stream(t, g.client(t), testRequest())
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if !reflect.DeepEqual(res.Message, c.want) || res.StopReason != c.stop {
				t.Errorf("got %+v stop %q, want %+v stop %q", res.Message, res.StopReason, c.want, c.stop)
			}
		})
	}
}

func TestResponsesRequestWireFormat(t *testing.T) {
	g := newGW(t, ProviderOpenAIResponses, rsStream(rsOK("ok")...))
	p, err := New(Config{Provider: ProviderOpenAIResponses, BaseURL: g.srv.URL + "/v1", APIKey: "test-key", Model: "gw-model", MaxTokens: 900})
	if err != nil {
		t.Fatal(err)
	}
	req := testRequest()
	req.Messages[2].Reasoning = []json.RawMessage{json.RawMessage(rsReasoning), json.RawMessage(`{"id":"rs_2","type":"reasoning","summary":[],"encrypted_content":"second"}`)}
	req.CacheKey = "session-1"
	if _, _, err := stream(t, p, req); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if got := g.header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q", got)
	}
	body := g.request(t)
	for k, want := range map[string]any{
		"model": "gw-model", "stream": true, "store": false, "instructions": "You are terse.",
		"max_output_tokens": 900.0, "prompt_cache_key": "session-1",
	} {
		if body[k] != want {
			t.Errorf("%s = %v, want %v", k, body[k], want)
		}
	}
	if inc, _ := body["include"].([]any); len(inc) != 1 || inc[0] != "reasoning.encrypted_content" {
		t.Errorf("include = %v, want [reasoning.encrypted_content]", body["include"])
	}
	input, _ := body["input"].([]any)
	var kinds []string
	for _, it := range input {
		m := it.(map[string]any)
		k, _ := m["type"].(string)
		if role, ok := m["role"].(string); ok {
			k += ":" + role
		}
		kinds = append(kinds, k)
	}
	want := []string{"message:user", "reasoning", "reasoning", "message:assistant", "function_call", "function_call_output", "message:developer"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("input items = %v, want %v", kinds, want)
	}
	raw, _ := json.Marshal(input[1])
	if !jsonEqual(t, raw, []byte(rsReasoning)) {
		t.Errorf("reasoning item = %s, want it as the model sent it: %s", raw, rsReasoning)
	}
	if r2 := input[2].(map[string]any); r2["encrypted_content"] != "second" {
		t.Errorf("second reasoning item = %v", r2)
	}
	call := input[4].(map[string]any)
	if call["call_id"] != "call_0" || call["name"] != "read_file" || call["arguments"] != `{"path":"a.go"}` {
		t.Errorf("function_call = %v", call)
	}
	if out := input[5].(map[string]any); out["call_id"] != "call_0" || out["output"] != "no such file" {
		t.Errorf("function_call_output = %v", out)
	}
	if last := input[6].(map[string]any); last["content"] != contract.StrictInstruction {
		t.Errorf("last item = %v, want the strict instruction", last)
	}
	tool := body["tools"].([]any)[0].(map[string]any)
	params, _ := tool["parameters"].(map[string]any)
	if tool["type"] != "function" || tool["name"] != "read_file" || tool["strict"] != false || params["additionalProperties"] != false {
		t.Errorf("tool = %v", tool)
	}
}

// TestResponsesBadReasoning: a stored reasoning item that is not a JSON object is refused before
// anything is sent.
func TestResponsesBadReasoning(t *testing.T) {
	g := newGW(t, ProviderOpenAIResponses, rsStream(rsOK("ok")...))
	req := testRequest()
	req.Messages[2].Reasoning = []json.RawMessage{json.RawMessage(`"not an object"`)}
	if _, _, err := stream(t, g.client(t), req); err == nil {
		t.Fatal("Stream succeeded with a reasoning item that is not an object")
	}
	if n := g.requests.Load(); n != 0 {
		t.Errorf("gateway saw %d requests, want none", n)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

func TestResponsesFailures(t *testing.T) {
	rateLimit := `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	begin := []rsEvent{rsCreated(), rsAdded(0, rsMessage(""))}
	withText := slices.Concat(begin, []rsEvent{rsText(0, "one")})
	runFailures(t, ProviderOpenAIResponses, []failCase{
		{name: "429 with Retry-After", handler: status(429, "application/json", rateLimit, "Retry-After", "7"),
			class: contract.ClassThrottle, handle: Retry, after: 7 * time.Second},
		{name: "429 insufficient_quota", handler: status(429, "application/json",
			`{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			class: contract.ClassBudget, handle: Surface},
		{name: "503", handler: status(503, "application/json", `{"error":{"message":"upstream unavailable","type":"server_error"}}`),
			class: contract.ClassTransport, handle: Retry},
		{name: "connection closed before any byte", handler: hangUp,
			class: contract.ClassTransport, handle: Retry},
		{name: "stream cut after 2 deltas", handler: rsCut(slices.Concat(withText, []rsEvent{rsText(0, "two")})...),
			class: contract.ClassTruncated, handle: Surface, deltas: 2},
		{name: "stream cut before any delta", handler: rsCut(begin...),
			class: contract.ClassTransport, handle: Retry},
		{name: "stream ends without response.completed", handler: rsStream(withText...),
			class: contract.ClassTruncated, handle: Surface, deltas: 1},
		{name: "malformed event", handler: rsStream(rsCreated(), rsEvent{"response.output_item.added", `{"type":"response.output_item.added","item":{`}),
			class: contract.ClassSchema, handle: Retry},
		{name: "event without a type", handler: rsStream(rsEvent{"", `{"sequence_number":1}`}),
			class: contract.ClassSchema, handle: Retry},
		{name: "delta before response.created", handler: rsStream(rsText(0, "x")),
			class: contract.ClassSchema, handle: Retry},
		{name: "delta for an item never added", handler: rsStream(rsCreated(), rsText(3, "x")),
			class: contract.ClassSchema, handle: Retry},
		{name: "text delta for a function call", handler: rsStream(rsCreated(), rsAdded(0, rsCall("")), rsText(0, "x")),
			class: contract.ClassSchema, handle: Retry},
		{name: "arguments delta for a message", handler: rsStream(rsCreated(), rsAdded(0, rsMessage("")), rsArgs(0, "{}")),
			class: contract.ClassSchema, handle: Retry},
		{name: "function call without a name", handler: rsStream(rsCreated(), rsAdded(0, map[string]any{"type": "function_call", "call_id": "c"}),
			rsDone(0, map[string]any{"type": "function_call", "call_id": "c", "arguments": "{}"}), rsCompleted(1, 1, 0)),
			class: contract.ClassSchema, handle: Retry},
		{name: "reasoning item never done", handler: rsStream(rsCreated(), rsAdded(0, map[string]any{"id": "rs_1", "type": "reasoning", "summary": []any{}}), rsCompleted(1, 1, 0)),
			class: contract.ClassSchema, handle: Retry},
		{name: "200 that is not an event stream", handler: status(200, "application/json", `{"id":"resp_1","output":[]}`),
			class: contract.ClassSchema, handle: Retry},
		{name: "refusal", handler: rsStream(rsCreated(), rsAdded(0, rsMessage("")),
			rs("response.refusal.delta", map[string]any{"output_index": 0, "item_id": "msg_1", "content_index": 0, "delta": "I can't help with that."}), rsCompleted(1, 1, 0)),
			class: contract.ClassRefusal, handle: Surface},
		{name: "incomplete for content_filter", handler: rsStream(rsCreated(), rsIncomplete("content_filter")),
			class: contract.ClassRefusal, handle: Surface},
		{name: "error event rate_limit_exceeded", handler: rsStream(rsCreated(), rsError("rate_limit_exceeded", "slow down")),
			class: contract.ClassThrottle, handle: Retry},
		{name: "error event server_error", handler: rsStream(rsCreated(), rsError("server_error", "try again")),
			class: contract.ClassTransport, handle: Retry},
		{name: "error event insufficient_quota", handler: rsStream(rsError("insufficient_quota", "You exceeded your current quota.")),
			class: contract.ClassBudget, handle: Surface},
		{name: "error event with a nested error object", handler: rsStream(rsCreated(), rsEvent{"error", `{"type":"error","error":{"type":"server_error","code":"server_error","message":"boom"}}`}),
			class: contract.ClassTransport, handle: Retry},
		{name: "error event after output", handler: rsStream(slices.Concat(withText, []rsEvent{rsError("server_error", "try again")})...),
			class: contract.ClassTruncated, handle: Surface, deltas: 1},
		{name: "response.failed server_error", handler: rsStream(rsCreated(), rsFailed("server_error", "The model failed.")),
			class: contract.ClassTransport, handle: Retry},
		{name: "response.failed rate_limit_exceeded", handler: rsStream(rsCreated(), rsFailed("rate_limit_exceeded", "Too many tokens.")),
			class: contract.ClassThrottle, handle: Retry},
		{name: "response.failed invalid_prompt", handler: rsStream(rsCreated(), rsFailed("invalid_prompt", "Flagged.")),
			class: contract.ClassUnknown, handle: Surface},
		{name: "response.failed after output", handler: rsStream(slices.Concat(withText, []rsEvent{rsFailed("server_error", "The model failed.")})...),
			class: contract.ClassTruncated, handle: Surface, deltas: 1},
	})
}

func TestResponsesCancel(t *testing.T) {
	runCancel(t, ProviderOpenAIResponses, func(w http.ResponseWriter) {
		startSSE(w)
		for _, e := range []rsEvent{rsCreated(), rsAdded(0, rsMessage("")), rsText(0, "first")} {
			send(w, e.name, e.data)
		}
	})
}
