// Package selftest runs every row of Keel's fault matrix (gateway, tools, limits, cancellation) as
// its own starter process against a dev server, so each injection is the only one in effect, and
// reports one line per row and a closing count.
package selftest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// Row is one fault-matrix row: the demo run with args, and what must come out.
type Row struct {
	Name string
	Args []string
	Env  []string
	// Status and Code are the expected final status and exit status.
	Status string
	Code   int
	// Attempts, when set, is the expected number of attempts of the faulted model call.
	Attempts int
	// Limit, when set, is the limit that must have stopped the session.
	Limit string
	// CancelOn, when set, sends SIGINT to the starter once an event satisfies it.
	CancelOn func(contract.Event) bool
	// SayOn, when set, sends Say to the session with `starter say` once an event satisfies it.
	SayOn func(contract.Event) bool
	Say   string
	// Check, when set, checks anything else.
	Check func(events []contract.Event, s contract.Summary) error
	// GitHub runs the row's session on a pull request of a local GitHub, and its escalation is
	// answered there: a collaborator's `/keel edit` comment through the GitHub bot.
	GitHub bool
}

// Result is the outcome of one row.
type Result struct {
	Row      Row
	Err      error
	Summary  contract.Summary
	Duration time.Duration
}

// Run runs rows with at most parallel processes of starter (a path) with env, and writes one line
// per row to out as each finishes, then the closing count. It returns the number of failures.
func Run(ctx context.Context, starter string, env []string, rows []Row, parallel int, out io.Writer) int {
	results := make(chan Result)
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for _, r := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results <- runRow(ctx, starter, env, r)
		}()
	}
	go func() { wg.Wait(); close(results) }()
	passed, failed := 0, 0
	for res := range results {
		if res.Err != nil {
			failed++
			fmt.Fprintf(out, "FAIL %-28s %s (%s)\n", res.Row.Name, res.Err, res.Duration.Round(100*time.Millisecond))
			continue
		}
		passed++
		fmt.Fprintf(out, "ok   %-28s %s (%s)\n", res.Row.Name, describe(res.Summary), res.Duration.Round(100*time.Millisecond))
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", passed, failed)
	return failed
}

func describe(s contract.Summary) string {
	d := fmt.Sprintf("%s, %s, %s for %s", s.Status, textfmt.Count(int64(s.Turns), "turn"),
		textfmt.Count(int64(s.GatewayAttempts), "model attempt"), textfmt.Count(int64(s.GatewayCalls), "call"))
	if s.Limit != "" {
		d += ", limit " + s.Limit
	}
	return d
}

// runRow runs one row in a fresh starter process and checks it.
func runRow(ctx context.Context, starter string, env []string, r Row) Result {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	args := append([]string{"demo", "--output", "jsonl"}, r.Args...)
	dir := stateDir(r.Name)
	defer os.RemoveAll(dir)
	var rig *githubRig
	if r.GitHub {
		var err error
		if rig, err = startGitHubRig(ctx, env); err != nil {
			return Result{Row: r, Err: err}
		}
		defer rig.close()
		if args, err = rig.args(dir); err != nil {
			return Result{Row: r, Err: err}
		}
		r.Env, r.Check = append(r.Env, rig.env()...), rig.check
	}
	cmd := exec.CommandContext(ctx, starter, args...)
	// A state folder and a task queue of its own: no other worker can take this row's tasks.
	cmd.Env = append(append([]string(nil), env...), "KEEL_DEV_STATE_DIR="+dir, "KEEL_TEMPORAL_TASK_QUEUE="+filepath.Base(dir))
	cmd.Env = append(cmd.Env, r.Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Result{Row: r, Err: err}
	}
	if err := cmd.Start(); err != nil {
		return Result{Row: r, Err: fmt.Errorf("starting the starter: %w", err)}
	}
	var events []contract.Event
	var sum contract.Summary
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	cancelled, answered := false, false
	var wid string
	said := make(chan error, 1)
	for sc.Scan() {
		var e contract.Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		events = append(events, e)
		if e.Event == contract.EventSummary {
			_ = json.Unmarshal(sc.Bytes(), &sum)
		}
		if e.Event == contract.EventNotice && strings.HasPrefix(e.Text, "session ") && wid == "" {
			wid = strings.Fields(e.Text)[1]
		}
		if r.SayOn != nil && wid != "" && r.SayOn(e) {
			r.SayOn = nil
			go func() { said <- say(ctx, starter, cmd.Env, wid, r.Say) }()
		}
		if rig != nil && !answered && e.Event == contract.EventEscalation && e.Escalation != nil {
			answered = true
			go rig.answer(ctx)
		}
		if r.CancelOn != nil && !cancelled && r.CancelOn(e) {
			cancelled = true
			_ = cmd.Process.Signal(os.Interrupt)
		}
	}
	_ = cmd.Wait()
	res := Result{Row: r, Summary: sum, Duration: time.Since(start)}
	res.Err = check(r, cmd.ProcessState.ExitCode(), events, sum)
	if res.Err != nil && rig != nil {
		res.Err = rig.explain(res.Err)
	}
	if r.Say != "" && res.Err == nil {
		select {
		case err := <-said:
			res.Err = err
		default:
			res.Err = fmt.Errorf("the message %q was never sent", r.Say)
		}
	}
	if res.Err != nil && stderr.Len() > 0 {
		res.Err = fmt.Errorf("%w; stderr: %s", res.Err, lastLine(stderr.String()))
	}
	return res
}

// say runs `starter say` against the row's session, as a person at another terminal would.
func say(ctx context.Context, starter string, env []string, wid, text string) error {
	c := exec.CommandContext(ctx, starter, "say", wid, text)
	c.Env = env
	out, err := c.CombinedOutput()
	if err != nil {
		return fmt.Errorf("starter say: %w: %s", err, lastLine(string(out)))
	}
	return nil
}

func check(r Row, code int, events []contract.Event, s contract.Summary) error {
	switch {
	case s.Status != r.Status:
		return fmt.Errorf("status %q, want %q (reason %q)", s.Status, r.Status, s.Reason)
	case code != r.Code:
		return fmt.Errorf("exit %d, want %d", code, r.Code)
	case r.Attempts > 0 && s.GatewayAttempts-s.GatewayCalls+1 != r.Attempts:
		return fmt.Errorf("the faulted call took %d attempts, want %d", s.GatewayAttempts-s.GatewayCalls+1, r.Attempts)
	case r.Limit != "" && s.Limit != r.Limit:
		return fmt.Errorf("limit %q, want %q", s.Limit, r.Limit)
	}
	if r.Check != nil {
		return r.Check(events, s)
	}
	return nil
}

func stateDir(name string) string {
	dir, err := os.MkdirTemp("", "keel-selftest-"+strings.NewReplacer("/", "-", " ", "-").Replace(name)+"-")
	if err != nil {
		return os.TempDir()
	}
	return dir
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
