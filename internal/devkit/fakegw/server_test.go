package fakegw

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestStartServesUntilClose(t *testing.T) {
	gw := New(Options{})
	if gw.BaseURL() != "" {
		t.Fatalf("BaseURL before Start = %q", gw.BaseURL())
	}
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	base := gw.BaseURL()
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("BaseURL = %q", base)
	}
	if err := gw.Start("127.0.0.1:0"); err == nil {
		t.Errorf("second Start succeeded")
	}
	body := wires[0].body("", []message{{Role: "user", Text: "Fix it."}})
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	events, err := readSSE(resp.Body)
	resp.Body.Close()
	if err != nil || len(events) == 0 || events[len(events)-1].Data != "[DONE]" {
		t.Fatalf("stream %v %v", events, err)
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body)); err == nil {
		t.Errorf("server still answers after Close")
	}
	if got := gw.Stats().Requests; got != 1 {
		t.Errorf("Requests = %d, want 1", got)
	}
}

func TestNonStreamingAndBadRequests(t *testing.T) {
	srv := New(Options{}).testServer(t)
	cases := []struct {
		name, path, body string
		status           int
		want             string
	}{
		{"openai json", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 200, `"finish_reason":"tool_calls"`},
		{"anthropic json", "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`, 200, `"stop_reason":"tool_use"`},
		{"openai garbage", "/v1/chat/completions", `{"messages":`, 400, `"type":"invalid_request_error"`},
		{"anthropic garbage", "/v1/messages", `[]`, 400, `"type":"error"`},
		{"unknown path", "/v1/embeddings", `{}`, 404, `"error"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var v map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(v)
			if resp.StatusCode != tc.status || !strings.Contains(string(b), tc.want) {
				t.Fatalf("%d %s, want %d with %s", resp.StatusCode, b, tc.status, tc.want)
			}
		})
	}
}
