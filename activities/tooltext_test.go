package activities_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/activities"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/gateway"
	"github.com/keelrun/keel/internal/store"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// TestCallModelSendsTheTurnsToolText: on a worker whose built-in tool text changed, a model call
// of a turn started with the released set sends the model that set's text, and one started with
// this build's set sends the new text.
func TestCallModelSendsTheTurnsToolText(t *testing.T) {
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	target, err := url.Parse(gw.BaseURL())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var last string
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = string(b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	p, err := gateway.New(gateway.Config{Provider: gateway.ProviderOpenAI, BaseURL: front.URL + "/v1", APIKey: "k", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	acts := &activities.Activities{Models: activities.Solo(p), Store: st}

	releasedDigest := toolspec.Digest(toolspec.Builtin())
	changed := toolspec.Builtin()
	for i := range changed {
		changed[i].Description += " (reworded)"
	}
	defer toolspec.OverrideBuiltin(changed)()

	cases := []struct {
		name     string
		digest   string
		reworded bool
	}{
		{"turn started with the released set", releasedDigest, false},
		{"turn started with this build's set", toolspec.Digest(changed), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var suite testsuite.WorkflowTestSuite
			env := suite.NewTestActivityEnvironment()
			env.RegisterActivityWithOptions(acts.CallModel, activity.RegisterOptions{Name: contract.CallModelActivity})
			_, err := env.ExecuteActivity(contract.CallModelActivity, contract.ModelRequest{
				SessionID: "s", Turn: 1, ModelSettings: contract.ModelSettings{Model: "m"}, BuiltinTools: c.digest,
				Append: []contract.Message{{Role: contract.RoleUser, Content: "fix the failing test"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			body := last
			mu.Unlock()
			if !strings.Contains(body, toolspec.ReadFile) || strings.Contains(body, "(reworded)") != c.reworded {
				t.Fatalf("the model was sent the wrong tool text (want reworded %v): %.300s", c.reworded, body)
			}
		})
	}
}
