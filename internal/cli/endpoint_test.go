package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// TestSessionEndpointFlags: the run's gateway flags become the session's endpoint, only those
// given; no flag leaves the endpoint to the workers; a value that could not work, or a key where
// its name belongs, is a usage error before anything starts.
func TestSessionEndpointFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want *contract.Endpoint
		err  string
	}{
		{name: "no flags", args: nil, want: nil},
		{name: "base URL", args: []string{"--base-url", "HTTP://No-Such-Host.invalid/v1/"}, want: &contract.Endpoint{BaseURL: "http://no-such-host.invalid/v1"}},
		{name: "all", args: []string{"--provider", "anthropic", "--base-url", "https://api.anthropic.com", "--model", "claude-x", "--api-key-ref", "claude"},
			want: &contract.Endpoint{Provider: "anthropic", BaseURL: "https://api.anthropic.com", Model: "claude-x", Key: "claude"}},
		{name: "model only", args: []string{"--model", "gpt-big"}, want: &contract.Endpoint{Model: "gpt-big"}},
		{name: "provider without a model takes the provider's default", args: []string{"--provider", "anthropic"},
			want: &contract.Endpoint{Provider: "anthropic", Model: contract.DefaultModel(contract.ProviderAnthropic)}},
		{name: "not http", args: []string{"--base-url", "ftp://host/v1"}, err: "--base-url"},
		{name: "credentials in the URL", args: []string{"--base-url", "https://u:p@host/v1"}, err: "carries credentials"},
		{name: "a key instead of its name", args: []string{"--api-key-ref", "sk-live-0123456789abcdef"}, err: "looks like an API key itself"},
		{name: "an odd name", args: []string{"--api-key-ref", "$OPENAI_API_KEY"}, err: "not a key name"},
		{name: "empty model", args: []string{"--model", " "}, err: "--model is empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			cmd := runCmd(&globals{})
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load("", cmd.Flags(), map[string]any{config.GatewayFake: true})
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := cmd.Flags().GetString("api-key-ref")
			got, err := sessionEndpoint(cmd, cfg, ref)
			if c.err != "" {
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, want a usage error naming %q", err, c.err)
				}
				if strings.Contains(err.Error(), "0123456789abcdef") {
					t.Fatalf("the error repeats the whole key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Fatalf("endpoint %+v, want %+v", got, c.want)
			}
		})
	}
}
