package selftest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// selftestSecret is put in the starter's environment; no command may see it.
const selftestSecret = "sk-selftest-sandbox-secret"

// sandboxEnv gives the escape rows small limits, so the fork bomb and the memory hog stay cheap,
// and a secret to look for.
var sandboxEnv = []string{"KEEL_TOOLS_LIMITS_PROCESSES=64", "KEEL_TOOLS_LIMITS_MEMORY_MB=256", "KEEL_GATEWAY_API_KEY=" + selftestSecret}

// sandboxRows are the hostile model's rows: every attempt of fakegw.EscapeSteps is contained and
// the session completes; a cancel during a command that started daemons leaves none behind; and
// one row per escape class but the limits (fakegw.ModeEscapeLimits maps 3 GiB, which only a
// cgroup bounds, so the e2e suite runs it).
func sandboxRows() []Row {
	return []Row{
		{
			Name: "sandbox escape", Args: []string{"--inject", fakegw.ModeEscape}, Env: sandboxEnv, Status: contract.StatusCompleted,
			Check: func(events []contract.Event, _ contract.Summary) error {
				if err := contained(events); err != nil {
					return err
				}
				return noSurvivors(events)
			},
		},
		{
			Name: "sandbox cancel", Args: []string{"--inject", fakegw.ModeEscapeHold}, Env: sandboxEnv, Status: contract.StatusCancelled, Code: 130,
			CancelOn: func(e contract.Event) bool {
				return e.Event == contract.EventToolCall && strings.Contains(e.Arguments, "sleep 1004")
			},
			Check: func(events []contract.Event, _ contract.Summary) error { return noSurvivors(events) },
		},
		classRow("sandbox setuid", fakegw.ModeEscapeSetuid),
		classRow("sandbox descriptors", fakegw.ModeEscapeDescriptors),
		classRow("sandbox signals", fakegw.ModeEscapeSignals),
		classRow("file tools fifo", fakegw.ModeEscapeFileTools),
		classRow("state outside workdir", fakegw.ModeEscapeState),
	}
}

// classRow is the row of one escape class: each attempt's result is true to what happened (see
// fakegw.EscapeClassSteps) and nothing the class started outlives the session. The demo's state
// folder holds its dev server's database; no result may name it.
func classRow(name, mode string) Row {
	return Row{
		Name: name, Args: []string{"--inject", mode}, Env: sandboxEnv, Status: contract.StatusCompleted,
		Check: func(events []contract.Event, _ contract.Summary) error {
			var results []string
			for _, e := range events {
				if e.Event == contract.EventToolResult {
					results = append(results, e.Text)
				}
			}
			steps := fakegw.EscapeClassSteps(mode, "")
			if len(results) != len(steps) {
				return fmt.Errorf("%d tool results, want one per attempt (%d)", len(results), len(steps))
			}
			for i, s := range steps {
				if why := s.Check(results[i]); why != "" {
					return fmt.Errorf("%s: %s: %q", s.Name, why, clip(results[i]))
				}
				if strings.Contains(results[i], selftestSecret) || strings.Contains(results[i], "temporal.db") {
					return fmt.Errorf("%s got through: %q", s.Name, clip(results[i]))
				}
			}
			return noSurvivors(events)
		},
	}
}

// clip keeps a result short enough for the row's one line.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// contained checks the escape row's tool results: no secret and no written marker shows, the
// daemons were stopped, and the memory hog was told about the limit.
func contained(events []contract.Event) error {
	var results []string
	for _, e := range events {
		if e.Event == contract.EventToolResult {
			results = append(results, e.Text)
		}
	}
	if len(results) < len(fakegw.EscapeSteps("")) {
		return fmt.Errorf("%d tool results, want one per attempt (%d)", len(results), len(fakegw.EscapeSteps("")))
	}
	stopped, memory := 0, 0
	for _, r := range results {
		if strings.Contains(r, selftestSecret) || strings.Contains(r, "pwned") {
			return fmt.Errorf("an attempt got through: %q", r)
		}
		if strings.Contains(r, "they were stopped") {
			stopped++
		}
		if strings.Contains(r, "out of memory under the sandbox's limit") {
			memory++
		}
	}
	if stopped < 2 || memory != 1 {
		return fmt.Errorf("%d results say background processes were stopped (want 2 or more), %d name the memory limit (want 1)", stopped, memory)
	}
	return nil
}

// noSurvivors waits up to 5 seconds for every process the hostile model started in the row's
// workspace to be gone.
func noSurvivors(events []contract.Event) error {
	ws := ""
	for _, e := range events {
		if p, ok := strings.CutPrefix(e.Text, "workspace: "); ok {
			ws = p
		}
	}
	if ws == "" {
		return fmt.Errorf("the run did not name its workspace")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := markedProcesses(ws)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes survived: %v", left)
		}
		time.Sleep(50 * time.Millisecond) // polling /proc; there is nothing to wait on
	}
}

// markedProcesses lists live processes in the folder ws with one of fakegw.EscapeMarks as an
// argument.
func markedProcesses(ws string) []string {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, c := range cmdlines {
		data, err := os.ReadFile(c)
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join(filepath.Dir(c), "cwd"))
		if err != nil || (cwd != ws && !strings.HasPrefix(cwd, ws+"/")) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(filepath.Dir(c), "stat"))
		if i := strings.LastIndexByte(string(stat), ')'); err != nil || i < 0 || len(stat) < i+3 || stat[i+2] == 'Z' {
			continue
		}
		for _, arg := range strings.Split(string(data), "\x00") {
			for _, m := range fakegw.EscapeMarks {
				if arg == m {
					out = append(out, filepath.Base(filepath.Dir(c))+" "+strings.ReplaceAll(string(data), "\x00", " "))
				}
			}
		}
	}
	return out
}
