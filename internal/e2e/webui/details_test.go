package webui

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdkpb "go.temporal.io/api/sdk/v1"

	"github.com/keelrun/keel/internal/contract"
)

// maxLine is the longest code line the Web UI's details pane shows whole at its usual width.
const maxLine = 80

// curly are the typographic characters Markdown puts in place of plain quotes and dots outside
// code; a command or JSON shown with them cannot be pasted.
const curly = "“”‘’…"

// detailsExpr reads the current details the Web UI renders (in an iframe on the User Metadata
// tab): their text and the text of each code block.
const detailsExpr = `(() => {
  const f = document.getElementById('user-metadata-current-details');
  const d = f && f.contentDocument;
  if (!d || !d.body) return '';
  return JSON.stringify({text: d.body.innerText, blocks: [...d.querySelectorAll('pre')].map(p => p.innerText)});
})()`

// shown is what detailsExpr returns.
type shown struct {
	Text   string   `json:"text"`
	Blocks []string `json:"blocks"`
}

// TestWebUIShowsHowToAnswer: the Web UI's page of a session waiting on a person, read by a
// headless Chromium, shows each answer as a line starting with its action word, every command in
// short lines, the approve and deny commands apart, and no curly quotes; `temporal workflow
// metadata` shows the same text and `temporal workflow describe` does not.
func TestWebUIShowsHowToAnswer(t *testing.T) {
	cases := []struct {
		name    string
		env     []string
		args    []string
		event   string
		actions []string
		// first is the first line of a command block that must be there.
		first []string
	}{
		{"escalation", nil, []string{"--inject", "bad_args"}, contract.EventEscalation,
			[]string{contract.ActionRetry, contract.ActionEdit, contract.ActionAbort}, []string{"starter answer ", "temporal workflow update execute \\"}},
		{"approval", []string{"KEEL_TOOLS_APPROVAL=writes"}, nil, contract.EventApproval,
			[]string{contract.ActionApprove, contract.ActionDeny}, []string{"starter approve \\", "starter approve --deny \\", "temporal workflow update execute \\"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := startDemo(t, c.env, c.args...)
			s.waitEvent(t, 90*time.Second, c.event)
			wid := s.workflowID(t)
			runID := waitDetails(t, wid, "**"+c.actions[len(c.actions)-1]+"**")
			b := startBrowser(t)
			p, err := b.open(fmt.Sprintf("http://127.0.0.1:%d/namespaces/default/workflows/%s/%s/user-metadata", uiPort, wid, runID))
			if err != nil {
				t.Fatal(err)
			}
			var got shown
			raw, ok := p.waitText(60*time.Second, detailsExpr, func(v string) bool {
				return json.Unmarshal([]byte(v), &got) == nil && len(got.Blocks) > 0
			})
			if !ok {
				t.Fatalf("the Web UI never showed the current details of %s; last read: %q", wid, raw)
			}
			checkShown(t, got, c.actions, c.first)
			checkCLI(t, wid)
			s.stop(t)
		})
	}
}

// checkShown checks the rendered details: a line per action, starting with the action word;
// short code lines; the expected commands; plain quotes.
func checkShown(t *testing.T, got shown, actions, first []string) {
	t.Helper()
	lines := strings.Split(got.Text, "\n")
	for _, a := range actions {
		found := false
		for _, l := range lines {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, a+":") || strings.HasPrefix(l, a+" with the Temporal CLI") {
				found = true
			}
		}
		if !found {
			t.Errorf("no line starts with %q:\n%s", a, got.Text)
		}
	}
	for _, block := range got.Blocks {
		for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
			if len(l) > maxLine {
				t.Errorf("a code line is %d characters long (the pane cuts it off): %q", len(l), l)
			}
		}
	}
	for _, f := range first {
		found := false
		for _, block := range got.Blocks {
			found = found || strings.HasPrefix(block, f)
		}
		if !found {
			t.Errorf("no command block starts with %q:\n%s", f, strings.Join(got.Blocks, "\n---\n"))
		}
	}
	if i := strings.IndexAny(got.Text, curly); i >= 0 {
		t.Errorf("the details show a typographic quote or ellipsis at %q:\n%s", got.Text[max(0, i-40):min(len(got.Text), i+40)], got.Text)
	}
}

// checkCLI checks what the docs say of the temporal CLI: `workflow metadata` shows the current
// details, `workflow describe` does not.
func checkCLI(t *testing.T, wid string) {
	t.Helper()
	run := func(sub string) string {
		out, err := exec.Command(temporalCLI, "workflow", sub, "--workflow-id", wid, "--address", env.Address()).CombinedOutput()
		if err != nil {
			t.Fatalf("temporal workflow %s: %v\n%s", sub, err, out)
		}
		return string(out)
	}
	if md := run("metadata"); !strings.Contains(md, "Current Details") || !strings.Contains(md, "starter ") {
		t.Errorf("temporal workflow metadata does not show the current details:\n%s", md)
	}
	if d := run("describe"); strings.Contains(d, "starter answer") || strings.Contains(d, "starter approve") {
		t.Errorf("temporal workflow describe shows the answer commands, unlike what the docs say:\n%s", d)
	}
}

// waitDetails waits until the session's current details contain want and returns its run ID.
func waitDetails(t *testing.T, wid, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		v, err := env.Client().QueryWorkflow(ctx, wid, "", "__temporal_workflow_metadata")
		var md sdkpb.WorkflowMetadata
		if err == nil && v.Get(&md) == nil && strings.Contains(md.GetCurrentDetails(), want) {
			d, err := env.Client().DescribeWorkflow(ctx, wid, "")
			cancel()
			if err != nil {
				t.Fatalf("describing %s: %v", wid, err)
			}
			return d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		}
		cancel()
		if time.Now().After(deadline) {
			t.Fatalf("the current details of %s never showed %q:\n%s (%v)", wid, want, md.GetCurrentDetails(), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// demo is a running `starter demo -o jsonl` and the events it printed.
type demo struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	cond   *sync.Cond
	events []contract.Event
	done   bool
	stderr strings.Builder
}

// startDemo starts the demo with the test's own task queue and state folder.
func startDemo(t *testing.T, extraEnv []string, args ...string) *demo {
	t.Helper()
	d := &demo{cmd: exec.Command(starter, append([]string{"demo", "--output", "jsonl"}, args...)...)}
	d.cond = sync.NewCond(&d.mu)
	d.cmd.Env = env.StarterEnv(t, extraEnv...)
	d.cmd.Stderr = &d.stderr
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("starting the demo: %v", err)
	}
	go d.read(out)
	t.Cleanup(func() {
		if d.cmd.ProcessState == nil {
			_ = d.cmd.Process.Kill()
			_ = d.cmd.Wait()
		}
	})
	return d
}

func (d *demo) read(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e contract.Event
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			d.mu.Lock()
			d.events = append(d.events, e)
			d.cond.Broadcast()
			d.mu.Unlock()
		}
	}
	d.mu.Lock()
	d.done = true
	d.cond.Broadcast()
	d.mu.Unlock()
}

// waitEvent waits for the first event of a kind.
func (d *demo) waitEvent(t *testing.T, timeout time.Duration, kind string) contract.Event {
	t.Helper()
	timer := time.AfterFunc(timeout, func() { d.mu.Lock(); d.cond.Broadcast(); d.mu.Unlock() })
	defer timer.Stop()
	deadline := time.Now().Add(timeout)
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		for _, e := range d.events {
			if e.Event == kind {
				return e
			}
		}
		if d.done || time.Now().After(deadline) {
			t.Fatalf("no %s event from the demo (ended: %v)\nstderr:\n%s", kind, d.done, d.stderr.String())
		}
		d.cond.Wait()
	}
}

// workflowID is the session's ID, from its first event.
func (d *demo) workflowID(t *testing.T) string {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.events {
		if e.WorkflowID != "" {
			return e.WorkflowID
		}
	}
	t.Fatal("no event named the session")
	return ""
}

// stop cancels the demo with a SIGTERM and waits for it to end.
func (d *demo) stop(t *testing.T) {
	t.Helper()
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()
}
