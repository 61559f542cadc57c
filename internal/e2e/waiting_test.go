package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdkpb "go.temporal.io/api/sdk/v1"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// metadata reads what the Web UI shows of a session: its current details and the descriptions
// of its queries, signals and updates.
func metadata(t *testing.T, wid string) *sdkpb.WorkflowMetadata {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	v, err := env.Client().QueryWorkflow(ctx, wid, "", "__temporal_workflow_metadata")
	if err != nil {
		t.Fatalf("querying the metadata of %s: %v", wid, err)
	}
	var md sdkpb.WorkflowMetadata
	if err := v.Get(&md); err != nil {
		t.Fatalf("decoding the metadata of %s: %v", wid, err)
	}
	return &md
}

// detailsLine waits until the session's current details show a command starting with prefix, and
// returns it as the block a person copies: continued lines and multi-line input included, which
// the shell reads as one command.
func detailsLine(t *testing.T, wid, prefix string) string {
	t.Helper()
	var line, details string
	ok := waitFor(30*time.Second, func() bool {
		details = metadata(t, wid).GetCurrentDetails()
		for _, block := range codeBlocks(details) {
			if strings.HasPrefix(continued.ReplaceAllString(block, " "), prefix) {
				line = block
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("the current details never showed %q:\n%s", prefix, details)
	}
	return line
}

// continued matches a shell line continuation with the blanks around it.
var continued = regexp.MustCompile(`\s*\\\n\s*`)

// codeBlocks are the Markdown code blocks of text (lines indented by four spaces), each with its
// indent removed.
func codeBlocks(text string) []string {
	var blocks []string
	var cur []string
	for _, l := range append(strings.Split(text, "\n"), "") {
		if rest, ok := strings.CutPrefix(l, "    "); ok {
			cur = append(cur, rest)
			continue
		}
		if len(cur) > 0 {
			blocks = append(blocks, strings.Join(cur, "\n"))
			cur = nil
		}
	}
	return blocks
}

// runLine runs a command line copied from the Web UI in a shell, as a person would paste it, with
// the starter and the Temporal CLI on the PATH and pointed at the test's server.
func runLine(t *testing.T, environ []string, line string) string {
	t.Helper()
	if strings.HasPrefix(line, "temporal ") {
		line += " --address " + env.Address()
	}
	cmd := exec.Command("sh", "-c", line)
	cmd.Env = append(environ, "PATH="+filepath.Dir(starter)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	return string(out)
}

// TestWaitingSessionShowsHowToAnswer: while a session waits on a person, its current details in
// the Web UI name what is pending and give the exact commands that answer it; pasting them works.
// Every query, signal and update the session offers has a description.
func TestWaitingSessionShowsHowToAnswer(t *testing.T) {
	t.Run("escalation", func(t *testing.T) {
		t.Parallel()
		shared := env.StarterEnv(t)
		l := startLiveEnv(t, shared, "demo", "--inject", "bad_args", "--output", "jsonl")
		wid := l.workflowID()
		e := l.waitEvent(60*time.Second, "escalation", func(e contract.Event) bool {
			return e.Event == contract.EventEscalation && e.Escalation != nil
		})
		requireDescriptions(t, metadata(t, wid))
		details := metadata(t, wid).GetCurrentDetails()
		for _, want := range []string{e.Escalation.ID, e.Escalation.Reason} {
			if !strings.Contains(details, want) {
				t.Fatalf("the current details do not name %q:\n%s", want, details)
			}
		}
		requireListed(t, shared, wid, e.Escalation.ID)
		// The Temporal CLI line answers retry; the session asks again, and the starter line aborts.
		out := runLine(t, shared, detailsLine(t, wid, "temporal workflow update execute --workflow-id "+wid+" --name "+contract.UpdateAnswerEscalation))
		if !strings.Contains(out, "accepted") {
			t.Fatalf("the Temporal CLI answer was not accepted:\n%s", out)
		}
		second := l.waitEvent(60*time.Second, "second escalation", func(ev contract.Event) bool {
			return ev.Event == contract.EventEscalation && ev.Escalation != nil && ev.Escalation.ID != e.Escalation.ID
		})
		runLine(t, shared, detailsLine(t, wid, "starter answer "+wid+" "+second.Escalation.ID+" abort"))
		r := l.finish()
		if r.Summary.Status != contract.StatusAborted {
			t.Fatalf("status %q after the pasted abort; want aborted\n%s", r.Summary.Status, r.Stderr)
		}
		requireTemporalEnd(t, r.Summary)
	})
	t.Run("approval", func(t *testing.T) {
		t.Parallel()
		shared := env.StarterEnv(t, "KEEL_TOOLS_APPROVAL=writes")
		l := startLiveEnv(t, shared, "demo", "--output", "jsonl")
		wid := l.workflowID()
		for seen, k := 0, 0; ; k++ {
			a, ok := l.nextApproval(60*time.Second, seen)
			if !ok {
				break
			}
			seen = a.Seq
			digest := contract.Digest(a.Arguments)
			if k%2 == 0 {
				runLine(t, shared, detailsLine(t, wid, "starter approve "+wid+" "+a.CallID+" --digest "+digest))
			} else {
				runLine(t, shared, detailsLine(t, wid, "temporal workflow update execute --workflow-id "+wid+" --name "+contract.UpdateApproveCall))
			}
		}
		r := l.finish()
		if r.Summary.Status != contract.StatusCompleted {
			t.Fatalf("status %q after approving with the pasted lines; want completed\n%s", r.Summary.Status, r.Stderr)
		}
	})
}

// requireDescriptions checks that the session offers its queries, signals and updates, each with
// a description.
func requireDescriptions(t *testing.T, md *sdkpb.WorkflowMetadata) {
	t.Helper()
	def := md.GetDefinition()
	got := map[string]string{}
	for _, d := range def.GetQueryDefinitions() {
		got["query "+d.GetName()] = d.GetDescription()
	}
	for _, d := range def.GetSignalDefinitions() {
		got["signal "+d.GetName()] = d.GetDescription()
	}
	for _, d := range def.GetUpdateDefinitions() {
		got["update "+d.GetName()] = d.GetDescription()
	}
	for _, name := range []string{
		"query " + contract.QueryStatus, "query " + contract.QueryTranscript,
		"signal " + contract.SignalCancel, "signal " + contract.SignalAnswerEscalation, "signal " + contract.SignalAttachSink, "signal " + contract.SignalSay,
		"update " + contract.UpdateAnswerEscalation, "update " + contract.UpdateApproveCall, "update " + contract.UpdateSay,
	} {
		if _, ok := got[name]; !ok {
			t.Errorf("the session does not list %s", name)
		}
	}
	for name, desc := range got {
		if strings.HasPrefix(name, "query __") {
			continue
		}
		if strings.TrimSpace(desc) == "" {
			t.Errorf("%s has no description", name)
		}
	}
}

// requireListed checks that `starter escalations -o jsonl` lists the pending escalation as an
// escalation record with its time and workflow ID.
func requireListed(t *testing.T, environ []string, wid, id string) {
	t.Helper()
	// The list reads the visibility store, which trails the session by a moment: ask until the
	// record shows up or the deadline passes.
	var out []byte
	var found *contract.Event
	waitFor(30*time.Second, func() bool {
		cmd := exec.Command(starter, "escalations", "-o", "jsonl")
		cmd.Env = environ
		var err error
		if out, err = cmd.Output(); err != nil {
			t.Fatalf("starter escalations -o jsonl: %v\n%s", err, out)
		}
		evs, _, err := testenv.ParseJSONL(out)
		if err != nil {
			t.Fatal(err)
		}
		for i, e := range evs {
			if e.Event == contract.EventEscalation && e.Escalation != nil && e.Escalation.ID == id {
				found = &evs[i]
				return true
			}
		}
		return false
	})
	if found == nil {
		t.Fatalf("starter escalations -o jsonl does not list %s:\n%s", id, out)
	}
	if found.WorkflowID != wid || found.Time.IsZero() {
		t.Fatalf("the escalation record lacks its workflow ID or time: %+v", *found)
	}
}
