package activities_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/store"
)

// keyedGateway is a fake gateway behind a server that records the credentials of every request.
type keyedGateway struct {
	srv  *httptest.Server
	mu   sync.Mutex
	keys []string
}

func startKeyedGateway(t *testing.T) *keyedGateway {
	t.Helper()
	g := &keyedGateway{}
	fake := fakegw.New(fakegw.Options{})
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.keys = append(g.keys, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		g.mu.Unlock()
		fake.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *keyedGateway) seen() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.keys...)
}

// TestCallModelServesSessionEndpoint: a model call whose session names an endpoint goes to that
// endpoint, with the key the worker declared for it (or none), never with the worker's own key,
// and the response names the endpoint's model; the worker's own gateway gets nothing. An endpoint
// the worker cannot serve fails at once, without retry, naming the setting, before any request.
func TestCallModelServesSessionEndpoint(t *testing.T) {
	own, second, third := startKeyedGateway(t), startKeyedGateway(t), startKeyedGateway(t)
	ownCfg := gateway.Config{Provider: gateway.ProviderOpenAI, BaseURL: own.srv.URL + "/v1", APIKey: "own-secret", Model: "gpt-own"}
	primary, err := gateway.New(ownCfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	models := activities.Solo(primary)
	models.Endpoints = &gateway.Endpoints{
		Own:  ownCfg,
		Keys: map[string]gateway.Key{"second": {Value: "second-secret", BaseURL: second.srv.URL + "/v1"}},
	}
	acts := &activities.Activities{Models: models, Store: st}
	cases := []struct {
		name      string
		ep        *contract.Endpoint
		gw        *keyedGateway
		wantKey   string
		wantModel string
		wantClass string
		wantIn    []string
	}{
		{name: "no endpoint: the worker's own", gw: own, wantKey: "own-secret", wantModel: "openai/gpt-session"},
		{name: "a second gateway with its declared key", ep: &contract.Endpoint{BaseURL: second.srv.URL + "/v1", Model: "endpoint-model"},
			gw: second, wantKey: "second-secret", wantModel: "openai/endpoint-model"},
		{name: "a gateway no key is declared for: none sent", ep: &contract.Endpoint{BaseURL: third.srv.URL + "/v1"},
			gw: third, wantKey: "", wantModel: "openai/gpt-session"},
		{name: "the worker's key named for a foreign host", ep: &contract.Endpoint{BaseURL: third.srv.URL + "/v1", Key: "default"},
			wantClass: contract.ClassEndpoint, wantIn: []string{config.GatewayAPIKey, "only to its own base URL"}},
		{name: "an undeclared key", ep: &contract.Endpoint{BaseURL: third.srv.URL + "/v1", Key: "home"},
			wantClass: contract.ClassEndpoint, wantIn: []string{`"home" is not declared`, config.GatewayKeys}},
		{name: "an unknown provider", ep: &contract.Endpoint{Provider: "bedrock"},
			wantClass: contract.ClassEndpoint, wantIn: []string{"bedrock", "--provider"}},
		{name: "an unreachable host", ep: &contract.Endpoint{BaseURL: "http://no-such-host.invalid/v1"},
			wantClass: contract.ClassTransport, wantIn: []string{"no-such-host.invalid"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := map[*keyedGateway]int{own: len(own.seen()), second: len(second.seen()), third: len(third.seen())}
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(acts.CallModel, activity.RegisterOptions{Name: contract.CallModelActivity})
			val, err := env.ExecuteActivity(contract.CallModelActivity, contract.ModelRequest{
				SessionID: "s-" + c.name, Turn: 1, ModelSettings: contract.ModelSettings{Model: "gpt-session", Endpoint: c.ep}, PriorAttempts: 3,
				Append: []contract.Message{{Role: contract.RoleUser, Content: "fix the failing test"}},
			})
			for g, n := range before {
				got := g.seen()[n:]
				switch {
				case g == c.gw && (len(got) != 1 || got[0] != c.wantKey):
					t.Errorf("the endpoint's gateway saw keys %q, want one request with %q", got, c.wantKey)
				case g != c.gw && len(got) != 0:
					t.Errorf("a gateway the call was not meant for saw %d requests (keys %q)", len(got), got)
				}
			}
			if c.wantClass != "" {
				var app *temporal.ApplicationError
				var f contract.Failure
				if !errors.As(err, &app) || app.Details(&f) != nil || f.Class != c.wantClass || !app.NonRetryable() {
					t.Fatalf("got %v, want a non-retryable %s failure", err, c.wantClass)
				}
				for _, want := range c.wantIn {
					if !strings.Contains(f.Reason, want) {
						t.Errorf("the reason does not name %q: %s", want, f.Reason)
					}
				}
				t.Logf("reason: %s", f.Reason)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var resp contract.ModelResponse
			if err := val.Get(&resp); err != nil || resp.Model != c.wantModel || resp.Fallback {
				t.Fatalf("answered by %q (fallback %v, %v), want %q", resp.Model, resp.Fallback, err, c.wantModel)
			}
		})
	}
}

// TestSessionEndpointThenWorkerFallbacks: the session's endpoint is the primary route of its
// calls, and the worker's gateway.fallbacks still come after it: an endpoint that is down hands the
// call to the worker's fallback, which is reported as such; the worker's own primary is skipped.
func TestSessionEndpointThenWorkerFallbacks(t *testing.T) {
	own, fb := startKeyedGateway(t), startKeyedGateway(t)
	ownCfg := gateway.Config{Provider: gateway.ProviderOpenAI, BaseURL: own.srv.URL + "/v1", APIKey: "own-secret"}
	primary, err := gateway.New(ownCfg)
	if err != nil {
		t.Fatal(err)
	}
	fallback, err := gateway.New(gateway.Config{Provider: gateway.ProviderOpenAI, BaseURL: fb.srv.URL + "/v1", APIKey: "fallback-secret"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	acts := &activities.Activities{Store: st, Models: &activities.Models{
		Chain:     gateway.NewChain(0, gateway.Route{Provider: primary}, gateway.Route{Provider: fallback, Model: fakegw.FallbackModel}),
		Endpoints: &gateway.Endpoints{Own: ownCfg},
	}}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivityWithOptions(acts.CallModel, activity.RegisterOptions{Name: contract.CallModelActivity})
	val, err := env.ExecuteActivity(contract.CallModelActivity, contract.ModelRequest{
		SessionID: "s", Turn: 1, PriorAttempts: 3,
		ModelSettings: contract.ModelSettings{Model: "gpt-session", Endpoint: &contract.Endpoint{BaseURL: "http://no-such-host.invalid/v1", Model: "endpoint-model"}},
		Append:        []contract.Message{{Role: contract.RoleUser, Content: "fix the failing test"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var resp contract.ModelResponse
	if err := val.Get(&resp); err != nil || resp.Model != "openai/"+fakegw.FallbackModel || !resp.Fallback {
		t.Fatalf("answered by %q (fallback %v, %v), want the worker's fallback", resp.Model, resp.Fallback, err)
	}
	if n := len(own.seen()); n != 0 {
		t.Errorf("the worker's own primary got %d requests; the session's endpoint replaces it", n)
	}
	if got := fb.seen(); len(got) != 1 || got[0] != "fallback-secret" {
		t.Errorf("the fallback saw keys %q, want one request with its own key", got)
	}
}

// TestScriptedWorkerServesOnlyScripted: a dev stack's scripted worker answers only a session that
// asked for the scripted model; one that did not (a real task, from a starter without
// gateway.fake) fails at once saying so, before any request, instead of being answered by the
// script.
func TestScriptedWorkerServesOnlyScripted(t *testing.T) {
	own := startKeyedGateway(t)
	ownCfg := gateway.Config{Provider: gateway.ProviderOpenAI, BaseURL: own.srv.URL + "/v1", Model: "gpt-own"}
	primary, err := gateway.New(ownCfg)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	models := activities.Solo(primary)
	models.Endpoints = &gateway.Endpoints{Own: ownCfg, Scripted: true}
	acts := &activities.Activities{Models: models, Store: st}
	cases := []struct {
		name   string
		ep     *contract.Endpoint
		served bool
	}{
		{"asked for the scripted model", &contract.Endpoint{Scripted: true}, true},
		{"no endpoint", nil, false},
		{"a model of its own", &contract.Endpoint{Model: "gpt-real"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := len(own.seen())
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(acts.CallModel, activity.RegisterOptions{Name: contract.CallModelActivity})
			val, err := env.ExecuteActivity(contract.CallModelActivity, contract.ModelRequest{
				SessionID: "s-" + c.name, Turn: 1, ModelSettings: contract.ModelSettings{Model: "gpt-session", Endpoint: c.ep},
				Append: []contract.Message{{Role: contract.RoleUser, Content: "say hi"}},
			})
			if c.served {
				if err != nil || len(own.seen()) != before+1 {
					t.Fatalf("not served by the scripted gateway: %v", err)
				}
				// The reply names the script as what answered, as attempts shows it.
				var resp contract.ModelResponse
				if err := val.Get(&resp); err != nil || resp.Model != activities.ScriptedLabel+"openai/gpt-session" {
					t.Fatalf("the reply names %q (%v), want the scripted fake", resp.Model, err)
				}
				return
			}
			var app *temporal.ApplicationError
			var f contract.Failure
			if !errors.As(err, &app) || app.Details(&f) != nil || f.Class != contract.ClassEndpoint || !strings.Contains(f.Reason, "did not ask for the scripted model") {
				t.Fatalf("got %v, want an endpoint failure saying the session did not ask for the scripted model", err)
			}
			if len(own.seen()) != before {
				t.Fatal("the scripted gateway was called")
			}
		})
	}
}
