package gateway

import (
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/config"
)

// TestFailuresNameHostAndFix: a failure caused by a wrong base URL, model or key names the gateway
// host, the status and the setting to check, through the real provider clients.
func TestFailuresNameHostAndFix(t *testing.T) {
	notFound := status(404, "application/json", `{"error":{"message":"The model 'gpt-nope' does not exist","type":"invalid_request_error","code":"model_not_found"}}`)
	cases := []struct {
		name     string
		provider string
		handler  http.HandlerFunc
		want     []string
	}{
		{"openai 404", ProviderOpenAI, notFound, []string{"HTTP 404", config.GatewayBaseURL, config.GatewayModel}},
		{"openai-responses 404", ProviderOpenAIResponses, notFound, []string{"HTTP 404", config.GatewayBaseURL, config.GatewayModel}},
		{"anthropic 404", ProviderAnthropic, status(404, "application/json", `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`),
			[]string{"HTTP 404", config.GatewayBaseURL, config.GatewayModel}},
		{"openai 401", ProviderOpenAI, status(401, "application/json", `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`),
			[]string{"HTTP 401", "refused the API key", config.GatewayAPIKey}},
		{"anthropic 403", ProviderAnthropic, status(403, "application/json", `{"type":"error","error":{"type":"permission_error","message":"not allowed"}}`),
			[]string{"HTTP 403", "refused the API key", config.GatewayAPIKey}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGW(t, tc.provider, tc.handler)
			_, _, err := stream(t, g.client(t), testRequest())
			d := Classify(err, 0)
			host := strings.TrimPrefix(g.srv.URL, "http://")
			for _, want := range append(tc.want, host) {
				if !strings.Contains(d.Message, want) {
					t.Errorf("%q does not name %q", d.Message, want)
				}
			}
		})
	}
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		c, err := New(Config{Provider: ProviderOpenAI, BaseURL: "http://" + addr + "/v1", APIKey: "k", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = stream(t, c, testRequest())
		d := Classify(err, 0)
		if d.Handling != Retry || !strings.Contains(d.Message, addr) || !strings.Contains(d.Message, config.GatewayBaseURL) {
			t.Fatalf("%s %q", d.Handling, d.Message)
		}
	})
	t.Run("unknown host", func(t *testing.T) {
		err := &url.Error{Op: "Post", URL: "http://no-such-host.invalid/v1/chat/completions", Err: &net.DNSError{Err: "no such host", Name: "no-such-host.invalid", IsNotFound: true}}
		d := Classify(err, 0)
		if d.Handling != Retry || !strings.Contains(d.Message, "no-such-host.invalid") || !strings.Contains(d.Message, config.GatewayBaseURL) {
			t.Fatalf("%s %q", d.Handling, d.Message)
		}
	})
}
