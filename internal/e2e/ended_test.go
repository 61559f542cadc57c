package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/testenv"
	"github.com/keelrun/keel/internal/session"
	"github.com/keelrun/keel/internal/slackbot"
)

// TestEndedSessionWithoutWorker: once a session has ended and no worker runs (the demo's own
// worker stopped with it), `starter watch` still shows its transcript, events and summary, and
// the status Slack's /keel status renders says how it ended: both read history and the store.
func TestEndedSessionWithoutWorker(t *testing.T) {
	shared := env.StarterEnv(t)
	r := startLiveEnv(t, shared, "demo", "--inject", "tool_error", "-o", "jsonl").finish()
	if r.Summary.Status != contract.StatusCompleted {
		t.Fatalf("the demo ended %q\n%s", r.Summary.Status, r.Stderr)
	}
	wid := r.Summary.WorkflowID

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, starter, "watch", wid, "-o", "jsonl")
	cmd.Env = shared
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("starter watch of an ended session with no worker: %v\n%s", err, out)
	}
	evs, sum, err := testenv.ParseJSONL(out)
	if err != nil {
		t.Fatal(err)
	}
	messages := 0
	for _, e := range evs {
		if e.Event == contract.EventMessage {
			messages++
		}
	}
	if messages < 4 || sum.Status != contract.StatusCompleted || sum.Turns != r.Summary.Turns || sum.ToolCalls != r.Summary.ToolCalls {
		t.Fatalf("watch showed %d messages and summary %+v; the session's own summary was %+v\n%s", messages, sum, r.Summary, out)
	}
	if strings.Contains(string(out), `"transcript"`) {
		t.Fatalf("the summary line carries the transcript:\n%s", out)
	}
	requireStamped(t, testenv.Run{Events: evs, Summary: sum, Stdout: string(out)})

	st, err := session.TemporalAnswerer{Client: env.Client()}.Status(ctx, wid)
	if err != nil {
		t.Fatalf("status of an ended session with no worker: %v", err)
	}
	text := slackbot.StatusText(wid, st)
	if st.Status != contract.StatusCompleted || st.Turn != r.Summary.Turns || !strings.Contains(text, "*completed*") {
		t.Fatalf("status %+v renders %q", st, text)
	}
}
