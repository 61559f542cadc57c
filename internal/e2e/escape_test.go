package e2e

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// escapeSecrets are in the worker's environment; no tool result may show them.
var escapeSecrets = []string{"KEEL_GATEWAY_API_KEY=sk-escape-secret-key", "KEEL_STORE_DSN=postgres://keel:escape-secret-pw@127.0.0.1:5432/x"}

// TestEscapeSuite drives a hostile scripted model over real HTTP through a real worker process:
// it reads the parent's and PID 1's environment, runs env, starts setsid and double-fork daemons,
// writes outside by absolute path, "..", symlink and hard link, tries /proc/self/root and
// /proc/<worker>/cwd, runs a fork bomb and a memory hog, connects to the Temporal frontend and the
// gateway's loopback port, and reads /etc/shadow. Every attempt fails, nothing outside the work
// directory changes, no process survives, and the session goes on with honest feedback. The same
// holds when the worker is killed mid-command and when `starter cancel` stops the session.
func TestEscapeSuite(t *testing.T) {
	for _, way := range []string{"plain", "worker killed", "starter cancel"} {
		t.Run(way, func(t *testing.T) { runEscape(t, way) })
	}
}

func runEscape(t *testing.T, way string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	gwURL := startGateway(t)
	base := t.TempDir()
	ws, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "target"), []byte("untouched\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	environ := env.StarterEnv(t, append([]string{"KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL=" + gwURL + "/v1",
		"KEEL_TOOLS_LIMITS_PROCESSES=64", "KEEL_TOOLS_LIMITS_MEMORY_MB=256"}, escapeSecrets...)...)
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	defer w.kill()

	mode := fakegw.ModeEscape
	if way != "plain" {
		mode = fakegw.ModeEscapeHold
	}
	gw, err := url.Parse(gwURL)
	if err != nil {
		t.Fatal(err)
	}
	task := fakegw.EscapeTask(mode, env.Address(), gw.Host, outside, w.cmd.Process.Pid)
	before := snapshotOutside(t, base, ws)
	run, err := env.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: envValue(environ, "KEEL_TEMPORAL_TASK_QUEUE")},
		contract.SessionWorkflow, contract.SessionInput{Task: task, Settings: contract.Settings{ToolSettings: contract.ToolSettings{Workdir: ws}}, Limits: contract.Limits{MaxTurns: 40}})
	if err != nil {
		t.Fatal(err)
	}
	if way != "plain" {
		if !waitFor(90*time.Second, func() bool {
			return len(processesWith(ws, "sleep", "1004")) > 0 && len(processesWith(ws, "sleep", "1003")) > 0
		}) {
			t.Fatal("the held command never started")
		}
		switch way {
		case "worker killed":
			w.kill()
		case "starter cancel":
			cmd := exec.Command(starter, "cancel", run.GetID())
			cmd.Env = environ
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("starter cancel: %v\n%s", err, out)
			}
		}
		if !waitFor(5*time.Second, func() bool { return len(survivors(ws)) == 0 }) {
			t.Fatalf("processes outlived the %s: %v", way, survivors(ws))
		}
		if way == "worker killed" {
			w.start()
		}
	}
	var sum contract.Summary
	err = run.Get(ctx, &sum)
	switch {
	case way == "starter cancel":
		if !temporal.IsCanceledError(err) && sum.Status != contract.StatusCancelled {
			t.Fatalf("the session did not end cancelled: %v %+v", err, sum)
		}
	case err != nil || sum.Status != contract.StatusCompleted:
		t.Fatalf("the session did not go on to complete: %v %+v", err, sum)
	}
	if s := survivors(ws); len(s) > 0 {
		t.Fatalf("processes survived: %v", s)
	}
	assertOutsideUnchanged(t, before, snapshotOutside(t, base, ws))
	if way == "starter cancel" {
		return
	}
	checkEscapeResults(t, ctx, run.GetID(), task, way == "worker killed")
}

// checkEscapeResults reads the tool results in order and checks each attempt's feedback.
func checkEscapeResults(t *testing.T, ctx context.Context, wid, task string, held bool) {
	t.Helper()
	var results []string
	for _, m := range transcriptOf(ctx, t, wid) {
		if m.Role == contract.RoleTool {
			results = append(results, m.Content)
		}
	}
	steps := fakegw.EscapeSteps(task)
	if held {
		if len(results) == 0 || !strings.Contains(results[0], "outcome is unknown") {
			t.Fatalf("the interrupted command's result does not say the outcome is unknown: %q", results)
		}
		results = results[1:]
	}
	if len(results) != len(steps) {
		t.Fatalf("%d results for %d attempts:\n%s", len(results), len(steps), strings.Join(results, "\n---\n"))
	}
	for i, s := range steps {
		res := results[i]
		for _, secret := range escapeSecrets {
			_, val, _ := strings.Cut(secret, "=")
			if strings.Contains(res, val) || strings.Contains(res, "escape-secret") {
				t.Errorf("%s: the result shows a worker secret:\n%s", s.Name, res)
			}
		}
		want := "which means it failed"
		switch s.Name {
		case "parent environ", "PID 1 environ", "env":
			want = "exit status"
		case "setsid daemon", "double fork":
			want = "they were stopped"
		case "fork bomb":
			// Its shell exits at once: what is left of the bomb is stopped then, or, on a busy
			// machine, it has already burnt out against the process limit.
			want = "were stopped"
			if strings.Contains(res, "limit on processes") {
				want = "limit on processes"
			}
		case "memory hog":
			want = "out of memory under the sandbox's limit"
		}
		if !strings.Contains(res, want) {
			t.Errorf("%s: the result lacks %q:\n%s", s.Name, want, res)
		}
		if strings.Contains(res, "pwned") {
			t.Errorf("%s: the attempt reports success:\n%s", s.Name, res)
		}
	}
}

// survivors lists live processes the hostile script started in the work directory ws.
func survivors(ws string) []string {
	var out []string
	for _, m := range fakegw.EscapeMarks {
		for _, p := range processesWith(ws, m) {
			out = append(out, m+":"+p)
		}
	}
	return out
}

// processesWith lists live (not zombie) processes working in the folder ws whose arguments
// include all of args in order. Other tests may run the same script at the same time elsewhere.
func processesWith(ws string, args ...string) []string {
	want := "\x00" + strings.Join(args, "\x00") + "\x00"
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, c := range cmdlines {
		data, err := os.ReadFile(c)
		if err != nil || !strings.Contains("\x00"+string(data), want) {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join(filepath.Dir(c), "cwd")); err != nil || (cwd != ws && !strings.HasPrefix(cwd, ws+"/")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(filepath.Dir(c), "stat"))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] != 'Z' {
			out = append(out, filepath.Base(filepath.Dir(c)))
		}
	}
	return out
}

// escapeMarkers are files a successful escape would create outside the work directory.
var escapeMarkers = []string{"/etc/keel-escape", "/keel-escape"}

// snapshotOutside records everything in base except the work directory and the other folders
// skip names (where the worker itself writes), and the markers.
func snapshotOutside(t *testing.T, base string, skip ...string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	err := filepath.Walk(base, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if slices.Contains(skip, p) {
			return filepath.SkipDir
		}
		val := info.Mode().String()
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			val += " " + string(data)
		}
		snap[p] = val
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range escapeMarkers {
		if _, err := os.Lstat(m); err == nil {
			snap[m] = "exists"
		}
	}
	return snap
}

func assertOutsideUnchanged(t *testing.T, before, after map[string]string) {
	t.Helper()
	for p, v := range after {
		if before[p] != v {
			t.Errorf("%s changed outside the work directory: %q -> %q", p, before[p], v)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("%s vanished outside the work directory", p)
		}
	}
}
