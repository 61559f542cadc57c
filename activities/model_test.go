package activities_test

import (
	"errors"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/store"
)

// TestCallModelFallsBack drives CallModel against the fake gateway over HTTP with its primary
// model down. A first attempt is retried on the primary (attempts left); the attempt that spends
// the primary's cap goes on to the fallback within the same call and reports which model answered;
// the next call then starts at the fallback, sending the primary nothing. Without a fallback the
// same failure is surfaced.
func TestCallModelFallsBack(t *testing.T) {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	provider := func(model string) gateway.Provider {
		p, err := gateway.New(gateway.Config{Provider: gateway.ProviderOpenAI, BaseURL: gw.BaseURL() + "/v1", APIKey: "k", Model: model})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	primary := provider("gpt-primary")
	chain := gateway.NewChain(0, gateway.Route{Provider: primary}, gateway.Route{Provider: provider(fakegw.FallbackModel), Model: fakegw.FallbackModel})
	with := &activities.Activities{Store: st, Models: &activities.Models{Chain: chain}}
	without := &activities.Activities{Models: activities.Solo(primary), Store: st}

	task := []contract.Message{{Role: contract.RoleUser, Content: fakegw.WithMode("fix the failing test", fakegw.ModePrimaryDown)}}
	cases := []struct {
		name          string
		acts          *activities.Activities
		prior         int
		wantModel     string
		wantClass     string
		wantRetryable bool
		// wantPrimary is how many requests the primary gets.
		wantPrimary int
	}{
		{name: "attempts left: retried on the primary", acts: with, wantClass: contract.ClassTransport, wantRetryable: true, wantPrimary: 1},
		{name: "cap spent: the fallback answers", acts: with, prior: 3, wantModel: "openai/" + fakegw.FallbackModel, wantPrimary: 1},
		{name: "breaker open: straight to the fallback", acts: with, wantModel: "openai/" + fakegw.FallbackModel, wantPrimary: 0},
		{name: "no fallback: surfaced", acts: without, prior: 3, wantClass: contract.ClassTransport, wantPrimary: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := primaryRequests(gw)
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(c.acts.CallModel, activity.RegisterOptions{Name: contract.CallModelActivity})
			val, err := env.ExecuteActivity(contract.CallModelActivity, contract.ModelRequest{
				SessionID: "s", Turn: 1, Append: task, ModelSettings: contract.ModelSettings{Model: "gpt-primary"}, PriorAttempts: c.prior,
			})
			if got := primaryRequests(gw) - before; got != c.wantPrimary {
				t.Errorf("the primary got %d requests, want %d", got, c.wantPrimary)
			}
			if c.wantClass != "" {
				var app *temporal.ApplicationError
				if !errors.As(err, &app) {
					t.Fatalf("want a model failure, got %v", err)
				}
				var f contract.Failure
				if app.Details(&f) != nil || f.Class != c.wantClass || app.NonRetryable() == c.wantRetryable {
					t.Fatalf("failure %+v (non-retryable %v), want class %s retryable %v", f, app.NonRetryable(), c.wantClass, c.wantRetryable)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var resp contract.ModelResponse
			if err := val.Get(&resp); err != nil {
				t.Fatal(err)
			}
			if resp.Model != c.wantModel || !resp.Fallback {
				t.Fatalf("answered by %q (fallback %v), want %q from the fallback", resp.Model, resp.Fallback, c.wantModel)
			}
		})
	}
}

// primaryRequests counts the requests the fake gateway refused because the primary is down.
func primaryRequests(gw *fakegw.Server) int {
	n := 0
	for _, r := range gw.Stats().Records {
		if r.Fault == fakegw.ModePrimaryDown {
			n++
		}
	}
	return n
}
