package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
)

// TestSelftestRunsOnItsOwnServer: `starter selftest`, with a server answering at the configured
// address, runs its rows on a dev server of its own (its sessions never reach the user's list),
// and --shared-server runs them on the configured one.
func TestSelftestRunsOnItsOwnServer(t *testing.T) {
	environ := env.StarterEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Each row runs on a task queue named for it (keel-selftest-ROW-..., a demo's suffix after
	// it): the sessions on the package's server on such a queue are the selftest's.
	const queue = "keel-selftest-limit-max-turns-"
	since := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	count := func() int {
		t.Helper()
		resp, err := env.Client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Query: "WorkflowType = 'AgentSession' AND StartTime > '" + since + "'", PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range resp.GetExecutions() {
			if strings.HasPrefix(e.GetTaskQueue(), queue) {
				n++
			}
		}
		return n
	}
	out, err := starterIn(environ, "selftest", "--only", "limit max-turns")
	if err != nil || !strings.Contains(out, "1 passed") {
		t.Fatalf("selftest: %v\n%s", err, out)
	}
	own := regexp.MustCompile(`runs on a dev server of its own \((127\.0\.0\.1:\d+)\)`).FindStringSubmatch(out)
	if own == nil || own[1] == env.Address() {
		t.Fatalf("selftest does not say it runs on a server of its own, or names the configured one (%s):\n%s", env.Address(), out)
	}
	if n := count(); n != 0 {
		t.Fatalf("%d of the selftest's sessions ran on the configured server", n)
	}
	out, err = starterIn(environ, "selftest", "--shared-server", "--only", "limit max-turns")
	if err != nil || !strings.Contains(out, "1 passed") || strings.Contains(out, "of its own") {
		t.Fatalf("selftest --shared-server: %v\n%s", err, out)
	}
	if !waitFor(30*time.Second, func() bool { return count() > 0 }) {
		t.Fatal("selftest --shared-server ran no session on the configured server")
	}
}
