package e2e

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestCompactionThenForkSeesFullTranscript runs a session through the real starter and worker with
// a context window so small that every model call passes 80 % of it. The session compacts after
// its fourth turn and still completes; the model calls after the compaction carry the summary and
// not the folded turns; `starter watch` still shows the whole transcript; and a fork from turn 2,
// which the compaction folded, gives the model all of the original's first two turns, not the
// summary.
func TestCompactionThenForkSeesFullTranscript(t *testing.T) {
	sw := startScripted(t, scriptedOptions{env: []string{"KEEL_LIMITS_CONTEXT_TOKENS=100"}})
	gw, environ, ws := sw.gw, sw.env, sw.ws

	orig := runIn(t, environ, "run", "--workdir", ws, "--output", "jsonl", "fix the failing test")
	sum := orig.Summary
	if orig.Code != 0 || sum.Status != contract.StatusCompleted || sum.Compactions < 1 || sum.CompactionTokens <= 0 {
		t.Fatalf("the session: exit %d, summary %+v\n%s", orig.Code, sum, orig.Stderr)
	}
	recs := gw.Stats().Records
	at := slices.IndexFunc(recs, func(r fakegw.Record) bool { return r.Compact })
	if at < 0 {
		t.Fatal("no model call asked for a compaction summary")
	}
	full := recs[at-1].Calls // the last call before the compaction saw every call before its own
	if len(full) < 3 || recs[at-1].Summarised {
		t.Fatalf("the call before the compaction saw %q (summarised %v)", full, recs[at-1].Summarised)
	}
	folded := 0
	for i, r := range recs[at+1:] {
		if r.Compact {
			continue
		}
		if !r.Summarised {
			t.Errorf("model call %d after the compaction lacks the summary", at+2+i)
		}
		for _, c := range full[:2] {
			if slices.Contains(r.Calls, c) {
				t.Errorf("model call %d after the compaction still carries the folded call %s", at+2+i, c)
			}
		}
		folded++
	}
	if folded == 0 {
		t.Fatal("no model call came after the compaction")
	}
	t.Logf("compacted after model call %d: %d calls folded, %d summary tokens, %d model calls after it",
		at, 2, sum.CompactionTokens, folded)

	watched := runIn(t, environ, "watch", sum.WorkflowID, "--output", "jsonl")
	var calls []string
	var compaction *contract.Event
	for _, e := range watched.Events {
		if e.Event == contract.EventMessage && e.Arguments != "" {
			calls = append(calls, e.Arguments)
		}
		if e.Event == contract.EventCompaction {
			compaction = &e
		}
	}
	if len(calls) != sum.Turns-1 || !strings.HasPrefix(calls[0], "list_dir") {
		t.Errorf("watch showed the calls %q of %d turns, want every call from the first", calls, sum.Turns)
	}
	if compaction == nil || compaction.Tokens <= 0 || compaction.SavedTokens <= 0 {
		t.Errorf("watch shows no compaction event with its tokens: %+v", compaction)
	} else {
		t.Logf("compaction event: %s", compaction.Text)
	}

	att := exec.Command(starter, "attempts", sum.WorkflowID)
	att.Env = environ
	out, err := att.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "compaction") || !strings.Contains(string(out), contract.CompactActivity) {
		t.Errorf("starter attempts does not list the compaction: %v\n%s", err, out)
	}

	before := len(gw.Stats().Records)
	fork := runIn(t, environ, "fork", sum.WorkflowID, "--turn", "2", "--output", "jsonl")
	if fork.Code != 0 || fork.Summary.Status != contract.StatusCompleted {
		t.Fatalf("the fork: exit %d, summary %+v\n%s", fork.Code, fork.Summary, fork.Stderr)
	}
	first := gw.Stats().Records[before]
	if first.Summarised || first.Compact || !slices.Equal(first.Calls, full[:2]) {
		t.Fatalf("the fork's first model call saw %q (summarised %v), want the original's first two calls %q in full", first.Calls, first.Summarised, full[:2])
	}
}

// runIn runs the starter to its end with the given environment (sharing the worker's store) and
// reads its jsonl output.
func runIn(t *testing.T, environ []string, args ...string) testenv.Run {
	t.Helper()
	cmd := exec.Command(starter, args...)
	cmd.Env = environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r, err := testenv.Finish(cmd, &stdout, &stderr)
	if err != nil {
		t.Fatalf("starter %v: %v\nstderr:\n%s", args, err, r.Stderr)
	}
	return r
}
