package gateway

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// oaChunk is one chat.completion.chunk with a delta for choice 0.
func oaChunk(delta map[string]any, finish any) string {
	return mustJSON(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gw-model",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	})
}

func oaText(s string) string { return oaChunk(map[string]any{"content": s}, nil) }

func oaRole() string { return oaChunk(map[string]any{"role": "assistant", "content": ""}, nil) }

func oaFinish(reason string) string { return oaChunk(map[string]any{}, reason) }

func oaUsage(in, out int) string {
	return mustJSON(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gw-model", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out},
	})
}

func oaToolDelta(call map[string]any) string {
	return oaChunk(map[string]any{"tool_calls": []any{call}}, nil)
}

// oaStream answers with the given data lines as an event stream.
func oaStream(lines ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		startSSE(w)
		for _, l := range lines {
			send(w, "", l)
		}
	}
}

// oaCut sends the lines and then drops the connection.
func oaCut(lines ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		oaStream(lines...)(w, r)
		cut()
	}
}

func TestOpenAIHappyPath(t *testing.T) {
	g := newGW(t, ProviderOpenAI, oaStream(
		oaRole(), oaText("Hel"), oaText("lo"), oaText(" world"),
		oaToolDelta(map[string]any{"index": 0, "id": "call_1", "type": "function", "function": map[string]any{"name": "read_file", "arguments": ""}}),
		oaToolDelta(map[string]any{"index": 0, "function": map[string]any{"arguments": `{"pa`}}),
		oaToolDelta(map[string]any{"index": 0, "function": map[string]any{"arguments": `th": "a`}}),
		oaToolDelta(map[string]any{"index": 0, "function": map[string]any{"arguments": `.go"}`}}),
		oaFinish("tool_calls"), oaUsage(12, 7), "[DONE]",
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
		}},
		Usage:      contract.Usage{InputTokens: 12, OutputTokens: 7},
		StopReason: "tool_calls",
	}
	if !reflect.DeepEqual(res, want) {
		t.Errorf("response = %+v, want %+v", res, want)
	}
	if n := g.requests.Load(); n != 1 {
		t.Errorf("gateway saw %d requests, want 1", n)
	}
}

func TestOpenAIRequestWireFormat(t *testing.T) {
	g := newGW(t, ProviderOpenAI, oaStream(oaText("ok"), oaFinish("stop"), "[DONE]"))
	if _, _, err := stream(t, g.client(t), testRequest()); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if got := g.header.Get("Authorization"); got != "Bearer test-key" {
		t.Errorf("Authorization = %q", got)
	}
	body := g.request(t)
	if body["model"] != "gw-model" || body["stream"] != true {
		t.Errorf("model/stream = %v/%v", body["model"], body["stream"])
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v, want include_usage true", body["stream_options"])
	}
	msgs, _ := body["messages"].([]any)
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	if want := []string{"system", "user", "assistant", "tool", "system"}; !reflect.DeepEqual(roles, want) {
		t.Fatalf("roles = %v, want %v", roles, want)
	}
	asst := msgs[2].(map[string]any)
	call := asst["tool_calls"].([]any)[0].(map[string]any)
	fn := call["function"].(map[string]any)
	if call["id"] != "call_0" || fn["name"] != "read_file" || fn["arguments"] != `{"path":"a.go"}` {
		t.Errorf("assistant tool call = %v", call)
	}
	if tool := msgs[3].(map[string]any); tool["tool_call_id"] != "call_0" || tool["content"] != "no such file" {
		t.Errorf("tool message = %v", tool)
	}
	if last := msgs[4].(map[string]any); last["content"] != contract.StrictInstruction {
		t.Errorf("last message = %v, want the strict instruction", last)
	}
	tool := body["tools"].([]any)[0].(map[string]any)
	fdef := tool["function"].(map[string]any)
	params := fdef["parameters"].(map[string]any)
	if tool["type"] != "function" || fdef["name"] != "read_file" || params["additionalProperties"] != false {
		t.Errorf("tool = %v", tool)
	}
}

func TestOpenAIFailures(t *testing.T) {
	rateLimit := `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	runFailures(t, ProviderOpenAI, []failCase{
		{name: "429 with Retry-After", handler: status(429, "application/json", rateLimit, "Retry-After", "7"),
			class: contract.ClassThrottle, handle: Retry, after: 7 * time.Second},
		{name: "429 with retry-after-ms", handler: status(429, "application/json", rateLimit, "Retry-After-Ms", "1500", "Retry-After", "2"),
			class: contract.ClassThrottle, handle: Retry, after: 1500 * time.Millisecond},
		{name: "429 insufficient_quota", handler: status(429, "application/json",
			`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			class: contract.ClassBudget, handle: Surface},
		{name: "503", handler: status(503, "application/json", `{"error":{"message":"upstream unavailable","type":"server_error"}}`),
			class: contract.ClassTransport, handle: Retry},
		{name: "529 overloaded", handler: status(529, "application/json", `{"error":{"message":"overloaded","type":"overloaded_error"}}`, "Retry-After", "3"),
			class: contract.ClassThrottle, handle: Retry, after: 3 * time.Second},
		{name: "connection closed before any byte", handler: hangUp,
			class: contract.ClassTransport, handle: Retry},
		{name: "stream cut after 2 deltas", handler: oaCut(oaRole(), oaText("one"), oaText("two")),
			class: contract.ClassTruncated, handle: Surface, deltas: 2},
		{name: "stream cut before any delta", handler: oaCut(oaRole()),
			class: contract.ClassTransport, handle: Retry},
		{name: "stream ends without [DONE]", handler: oaStream(oaText("one"), oaFinish("stop")),
			class: contract.ClassTruncated, handle: Surface, deltas: 1},
		{name: "stream ends without finish_reason", handler: oaStream(oaText("one"), "[DONE]"),
			class: contract.ClassTruncated, handle: Surface, deltas: 1},
		{name: "malformed chunk", handler: oaStream(oaRole(), `{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":`),
			class: contract.ClassSchema, handle: Retry},
		{name: "chunk without choices", handler: oaStream(`{"id":"chatcmpl-1","object":"chat.completion.chunk"}`),
			class: contract.ClassSchema, handle: Retry},
		{name: "chunk with mistyped choices", handler: oaStream(`{"id":"chatcmpl-1","choices":"oops"}`),
			class: contract.ClassSchema, handle: Retry},
		{name: "chunk with a mistyped delta", handler: oaStream(`{"id":"chatcmpl-1","choices":[{"index":0,"delta":"oops"}]}`),
			class: contract.ClassSchema, handle: Retry},
		{name: "tool call delta with a mistyped function", handler: oaStream(`{"id":"chatcmpl-1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":7}]}}]}`),
			class: contract.ClassSchema, handle: Retry},
		{name: "malformed chunk after output", handler: oaStream(oaText("one"), `{not json`),
			class: contract.ClassTruncated, handle: Surface, deltas: 1},
		{name: "200 that is not an event stream", handler: status(200, "application/json", `{"id":"chatcmpl-1","choices":[]}`),
			class: contract.ClassSchema, handle: Retry},
		{name: "refusal delta", handler: oaStream(oaChunk(map[string]any{"refusal": "I can't help with that."}, nil), oaFinish("stop"), "[DONE]"),
			class: contract.ClassRefusal, handle: Surface},
		{name: "content_filter", handler: oaStream(oaFinish("content_filter"), "[DONE]"),
			class: contract.ClassRefusal, handle: Surface},
		{name: "422 with an odd body", handler: status(422, "text/html", "<html><body>Unprocessable &amp; odd</body></html>"),
			class: contract.ClassUnknown, handle: Surface},
		{name: "400 invalid request", handler: status(400, "application/json", `{"error":{"message":"bad tools","type":"invalid_request_error"}}`),
			class: contract.ClassUnknown, handle: Surface},
		{name: "error event before output", handler: oaStream(`{"error":{"message":"upstream overloaded","type":"server_error"}}`),
			class: contract.ClassTransport, handle: Retry},
		{name: "error event after output", handler: oaStream(oaText("one"), `{"error":{"message":"upstream overloaded","type":"server_error"}}`),
			class: contract.ClassTruncated, handle: Surface, deltas: 1},
	})
}

func TestOpenAICancel(t *testing.T) {
	runCancel(t, ProviderOpenAI, func(w http.ResponseWriter) {
		startSSE(w)
		send(w, "", oaRole())
		send(w, "", oaText("first"))
	})
}
