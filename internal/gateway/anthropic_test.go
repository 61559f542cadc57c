package gateway

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// antEvent is one named server-sent event of the Messages stream.
type antEvent struct{ name, data string }

func antStart(in int) antEvent {
	return antEvent{"message_start", mustJSON(map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": "gw-model", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": in, "output_tokens": 1},
	}})}
}

func antTextStart(i int) antEvent {
	return antEvent{"content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": i,
		"content_block": map[string]any{"type": "text", "text": ""}})}
}

func antText(i int, s string) antEvent {
	return antEvent{"content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": i,
		"delta": map[string]any{"type": "text_delta", "text": s}})}
}

func antToolStart(i int, id, name string) antEvent {
	return antEvent{"content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": i,
		"content_block": map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}}})}
}

func antJSON(i int, part string) antEvent {
	return antEvent{"content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": i,
		"delta": map[string]any{"type": "input_json_delta", "partial_json": part}})}
}

func antBlockStop(i int) antEvent {
	return antEvent{"content_block_stop", mustJSON(map[string]any{"type": "content_block_stop", "index": i})}
}

func antDelta(stop string, out int) antEvent {
	return antEvent{"message_delta", mustJSON(map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}})}
}

func antStop() antEvent { return antEvent{"message_stop", `{"type":"message_stop"}`} }

func antPing() antEvent { return antEvent{"ping", `{"type": "ping"}`} }

func antError(kind, msg string) antEvent {
	return antEvent{"error", mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})}
}

// antStream answers with the events as an event stream.
func antStream(events ...antEvent) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		startSSE(w)
		for _, e := range events {
			send(w, e.name, e.data)
		}
	}
}

// antCut sends the events and then drops the connection.
func antCut(events ...antEvent) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		antStream(events...)(w, r)
		cut()
	}
}

// antBody is an Anthropic error body.
func antBody(kind, msg string) string {
	return mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": kind, "message": msg}})
}

func TestAnthropicHappyPath(t *testing.T) {
	g := newGW(t, ProviderAnthropic, antStream(
		antStart(12), antPing(),
		antTextStart(0), antText(0, "Hel"), antText(0, "lo"), antText(0, " world"), antBlockStop(0),
		antToolStart(1, "toolu_1", "read_file"),
		antJSON(1, ""), antJSON(1, `{"pa`), antJSON(1, `th": "a`), antJSON(1, `.go"}`), antBlockStop(1),
		antDelta("tool_use", 7), antStop(),
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
			{ID: "toolu_1", Name: "read_file", Arguments: `{"path": "a.go"}`},
		}},
		Usage:      contract.Usage{InputTokens: 12, OutputTokens: 7},
		StopReason: "tool_use",
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("response = %+v, want %+v", res, want)
	}
	if n := g.requests.Load(); n != 1 {
		t.Errorf("gateway saw %d requests, want 1", n)
	}
}

func TestAnthropicKeepsRawArguments(t *testing.T) {
	tests := []struct {
		name   string
		events []antEvent
		want   string
	}{
		{"tool without arguments", []antEvent{antToolStart(0, "toolu_1", "list"), antBlockStop(0)}, "{}"},
		{"arguments that are not JSON", []antEvent{antToolStart(0, "toolu_1", "list"), antJSON(0, `{"path": "a`), antBlockStop(0)}, `{"path": "a`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := append([]antEvent{antStart(1)}, tt.events...)
			events = append(events, antDelta("tool_use", 2), antStop())
			g := newGW(t, ProviderAnthropic, antStream(events...))
			res, _, err := stream(t, g.client(t), testRequest())
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if len(res.Message.ToolCalls) != 1 || res.Message.ToolCalls[0].Arguments != tt.want {
				t.Errorf("tool calls = %+v, want arguments %q", res.Message.ToolCalls, tt.want)
			}
		})
	}
}

func TestAnthropicRequestWireFormat(t *testing.T) {
	g := newGW(t, ProviderAnthropic, antStream(antStart(1), antTextStart(0), antText(0, "ok"), antBlockStop(0), antDelta("end_turn", 1), antStop()))
	req := testRequest()
	req.Messages = append(req.Messages, contract.Message{Role: contract.RoleUser, Content: "Try again."})
	if _, _, err := stream(t, g.client(t), req); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	// anthropic-sdk-go v2 sends the API key as a bearer token.
	if got := g.header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q", got)
	}
	body := g.request(t)
	if body["model"] != "gw-model" || body["stream"] != true || body["max_tokens"] != float64(DefaultMaxTokens) {
		t.Errorf("model/stream/max_tokens = %v/%v/%v", body["model"], body["stream"], body["max_tokens"])
	}
	system := body["system"].([]any)
	if len(system) != 2 || system[0].(map[string]any)["text"] != "You are terse." ||
		system[1].(map[string]any)["text"] != contract.StrictInstruction {
		t.Errorf("system = %v, want the system prompt then the strict instruction", system)
	}
	msgs := body["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages = %v, want user, assistant, user", msgs)
	}
	asst := msgs[1].(map[string]any)
	blocks := asst["content"].([]any)
	use := blocks[1].(map[string]any)
	if asst["role"] != "assistant" || use["type"] != "tool_use" || use["id"] != "call_0" ||
		!reflect.DeepEqual(use["input"], map[string]any{"path": "a.go"}) {
		t.Errorf("assistant turn = %v", asst)
	}
	last := msgs[2].(map[string]any)
	results := last["content"].([]any)
	result := results[0].(map[string]any)
	if last["role"] != "user" || result["type"] != "tool_result" || result["tool_use_id"] != "call_0" || result["is_error"] != true {
		t.Errorf("tool result turn = %v", last)
	}
	if len(results) != 2 || results[1].(map[string]any)["text"] != "Try again." {
		t.Errorf("the user text after the tool result should share its turn: %v", results)
	}
	tool := body["tools"].([]any)[0].(map[string]any)
	schema := tool["input_schema"].(map[string]any)
	if tool["name"] != "read_file" || schema["type"] != "object" || schema["additionalProperties"] != false ||
		!reflect.DeepEqual(schema["required"], []any{"path"}) {
		t.Errorf("tool = %v", tool)
	}
}

func TestAnthropicFailures(t *testing.T) {
	runFailures(t, ProviderAnthropic, []failCase{
		{name: "429 with Retry-After", handler: status(429, "application/json", antBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"), "Retry-After", "7"),
			class: contract.ClassThrottle, handle: Retry, after: 7 * time.Second},
		{name: "429 insufficient_quota", handler: status(429, "application/json", antBody("insufficient_quota", "quota exhausted")),
			class: contract.ClassBudget, handle: Surface},
		{name: "400 credit balance too low", handler: status(400, "application/json", antBody("invalid_request_error", "Your credit balance is too low to access the Anthropic API.")),
			class: contract.ClassBudget, handle: Surface},
		{name: "402 billing error", handler: status(402, "application/json", antBody("billing_error", "spend limit reached")),
			class: contract.ClassBudget, handle: Surface},
		{name: "503", handler: status(503, "application/json", antBody("api_error", "Internal server error")),
			class: contract.ClassTransport, handle: Retry},
		{name: "529 overloaded", handler: status(529, "application/json", antBody("overloaded_error", "Overloaded"), "Retry-After", "2"),
			class: contract.ClassThrottle, handle: Retry, after: 2 * time.Second},
		{name: "connection closed before any byte", handler: hangUp,
			class: contract.ClassTransport, handle: Retry},
		{name: "stream cut after 2 deltas", handler: antCut(antStart(3), antTextStart(0), antText(0, "one"), antText(0, "two")),
			class: contract.ClassTruncated, handle: Surface, deltas: 2},
		{name: "stream cut before any delta", handler: antCut(antStart(3), antTextStart(0)),
			class: contract.ClassTransport, handle: Retry},
		{name: "stream ends without message_stop", handler: antStream(antStart(3), antTextStart(0), antText(0, "one"), antBlockStop(0), antDelta("end_turn", 2)),
			class: contract.ClassTruncated, handle: Surface, deltas: 1},
		{name: "malformed event", handler: antStream(antStart(3), antEvent{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{`}),
			class: contract.ClassSchema, handle: Retry},
		{name: "event without a type", handler: antStream(antStart(3), antEvent{"content_block_delta", `{"index":0}`}),
			class: contract.ClassSchema, handle: Retry},
		{name: "delta for a block that never started", handler: antStream(antStart(3), antText(4, "x")),
			class: contract.ClassSchema, handle: Retry},
		{name: "content before message_start", handler: antStream(antTextStart(0)),
			class: contract.ClassSchema, handle: Retry},
		{name: "malformed event after output", handler: antStream(antStart(3), antTextStart(0), antText(0, "one"), antEvent{"content_block_delta", `{nope`}),
			class: contract.ClassTruncated, handle: Surface, deltas: 1},
		{name: "200 that is not an event stream", handler: status(200, "application/json", `{"id":"msg_1","type":"message"}`),
			class: contract.ClassSchema, handle: Retry},
		{name: "refusal", handler: antStream(antStart(3), antDelta("refusal", 1), antStop()),
			class: contract.ClassRefusal, handle: Surface},
		{name: "422 with an odd body", handler: status(422, "text/plain", "unprocessable, and not JSON at all"),
			class: contract.ClassUnknown, handle: Surface},
		{name: "401 authentication", handler: status(401, "application/json", antBody("authentication_error", "invalid x-api-key")),
			class: contract.ClassAuth, handle: Surface},
		{name: "overloaded error event before output", handler: antStream(antStart(3), antError("overloaded_error", "Overloaded")),
			class: contract.ClassThrottle, handle: Retry},
		{name: "overloaded error event after output", handler: antStream(antStart(3), antTextStart(0), antText(0, "one"), antError("overloaded_error", "Overloaded")),
			class: contract.ClassTruncated, handle: Surface, deltas: 1},
	})
}

func TestAnthropicCancel(t *testing.T) {
	runCancel(t, ProviderAnthropic, func(w http.ResponseWriter) {
		startSSE(w)
		for _, e := range []antEvent{antStart(3), antTextStart(0), antText(0, "first")} {
			send(w, e.name, e.data)
		}
	})
}
