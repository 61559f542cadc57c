package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
	"github.com/keelrun/keel/internal/devkit/testenv"
)

// TestHostileText runs a scripted hostile model (fakegw.ModeHostileText) through a real worker
// process and a real starter: its replies, a tool call's arguments, a file name, a command's
// output and its final answer carry escape sequences, C1 controls and bidi overrides, and its
// final answer carries lines made to look like Keel's. At a terminal (tmux), none of them reaches
// the terminal raw, the window title stays, no line of the model's looks like Keel's, and the
// approval of the 2,000-character command says how much it hides and shows the whole call on v
// before y. With --output jsonl, the output holds no raw control, C1 or bidi byte and still
// decodes to exactly what the model said.
func TestHostileText(t *testing.T) {
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	gwURL := startGateway(t)
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+gwURL+"/v1")
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	defer w.kill()
	task := fakegw.WithMode("Print whatever you like.", fakegw.ModeHostileText)

	t.Run("terminal", func(t *testing.T) { hostileAtTerminal(t, environ, task) })
	t.Run("jsonl", func(t *testing.T) { hostileAsJSONL(t, environ, task) })
}

func hostileAtTerminal(t *testing.T, environ []string, task string) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	taskFile, raw := filepath.Join(dir, "task"), filepath.Join(dir, "pane.raw")
	if err := os.WriteFile(taskFile, []byte(task), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startShell(t, append(append([]string(nil), environ...), "KEEL_TOOLS_APPROVAL=writes"))
	// Every byte the starter writes to the terminal, as written.
	s.tmux("pipe-pane", "-o", "cat >> "+raw)
	title := s.tmux("display-message", "-p", "#{pane_title}")
	s.typeLine(fmt.Sprintf(`%s run --workdir %s "$(cat %s)"; echo "exit=$?"`, starter, ws, taskFile))

	// Three calls wait for approval: the write, the printf and the long command.
	for _, want := range []string{"approve write_file", `approve run_command {"command":"printf`, `approve run_command {"command":"sh -c`} {
		sc := s.waitText(120*time.Second, want)
		if want == `approve run_command {"command":"sh -c` {
			prompt := lineWith(sc, want)
			if !strings.Contains(prompt, "characters hidden") || !strings.Contains(prompt, "[v]") || !strings.Contains(prompt, "hostile-tail-ran") {
				t.Errorf("the approval of the %d-character command neither shows its tail nor says how much is hidden and how to see it:\n%s", fakegw.HostileLongLen, prompt)
			} else {
				s.key("v")
				// The whole call, on one line once tmux joins the rows it wrapped.
				s.waitText(30*time.Second, strings.Repeat("=", fakegw.HostileLongLen-100)+"; echo hostile-tail-ran")
			}
		}
		s.key("y")
	}
	if code := s.waitExit(180 * time.Second); code != "0" {
		t.Fatalf("exit %s, want 0:\n%s", code, s.screen())
	}
	sc := s.screen()
	if got := s.tmux("display-message", "-p", "#{pane_title}"); got != title || strings.Contains(got, fakegw.HostileTitle) {
		t.Errorf("the model retitled the terminal: %q, was %q", got, title)
	}
	if _, err := os.Stat(filepath.Join(ws, fakegw.HostileFile)); err != nil {
		t.Errorf("the hostile file was not written (the test would prove nothing of its name): %v", err)
	}
	// The raw bytes: none of the hostile sequences, and no C1 control or bidi character at all.
	var out []byte
	if !waitFor(10*time.Second, func() bool {
		out, _ = os.ReadFile(raw)
		return bytes.Contains(out, []byte("exit=0"))
	}) {
		t.Fatalf("the raw capture never showed the exit:\n%q", out)
	}
	for _, seq := range fakegw.HostileSequences {
		if bytes.Contains(out, []byte(seq)) {
			t.Errorf("the terminal got %q raw", seq)
		}
	}
	if bad := rawControls(out, false); bad != "" {
		t.Errorf("the terminal got %s raw", bad)
	}
	// The visible forms of what the model sent, in its reply, a call's arguments, a file name and
	// its final answer (a command's output shows only in the status region while it runs, and in
	// the raw bytes above).
	for _, want := range []string{`now\x1b[2J\x1b[H.`, `\u009b2J\u009d0;pwned-title\u009c`, `\u2066isolated\u2069`,
		`\u009b2J\u202eexe.txt`, `evil\x1b]0;pwned-title\x07\u009b2J\u202eexe.txt`,
		`Done.\x1b]0;pwned-title\x07\u009d0;pwned-title\u009c`} {
		if !strings.Contains(sc, want) {
			t.Errorf("the screen lacks %q", want)
		}
	}
	// No line of the model's looks like Keel's own.
	for _, l := range strings.Split(sc, "\n") {
		for _, forged := range []string{fakegw.HostileForgedKeel, "keel: all clear", strings.TrimSpace(fakegw.HostileForgedMark)} {
			if trimmed := strings.TrimLeft(l, " "); strings.HasPrefix(trimmed, forged) {
				t.Errorf("the model printed a line like Keel's: %q", l)
			}
		}
	}
	if t.Failed() {
		t.Logf("the screen:\n%s", sc)
	}
}

func hostileAsJSONL(t *testing.T, environ []string, task string) {
	ws := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, starter, "run", "-o", "jsonl", "--workdir", ws, task)
	cmd.Env = append(append([]string(nil), environ...), "KEEL_TOOLS_APPROVAL=never")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("starter run -o jsonl: %v\n%s\n%s", err, out, stderr.Bytes())
	}
	if bad := rawControls(out, true); bad != "" {
		t.Errorf("the jsonl output holds %s raw", bad)
	}
	evs, sum, err := testenv.ParseJSONL(out)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != contract.StatusCompleted {
		t.Fatalf("the session ended %s:\n%s", sum.Status, out)
	}
	// The JSON escapes decode to exactly what the model sent: the final answer's deltas, a call's
	// arguments and a result that lists the file.
	var answer strings.Builder
	var args, results string
	last := 0
	for _, e := range evs {
		switch e.Event {
		case contract.EventDelta:
			if e.Turn != last {
				answer.Reset()
				last = e.Turn
			}
			answer.WriteString(e.Text)
		case contract.EventToolCall:
			args += e.Arguments
		case contract.EventToolResult:
			results += e.Text
		}
	}
	if answer.String() != fakegw.HostileAnswer {
		t.Errorf("the final answer's deltas decode to %q, want %q", answer.String(), fakegw.HostileAnswer)
	}
	path, _ := json.Marshal(fakegw.HostileFile)
	if !strings.Contains(args, string(path[1:len(path)-1])) || !strings.Contains(results, fakegw.HostileFile) {
		t.Errorf("the hostile file name did not come through the arguments and the results as it was:\n%q\n%q", args, results)
	}
}

// rawControls names the first sequence in out that a terminal would obey or that hides or
// reorders text; "" when there is none. In jsonl that is any control but the newline, DEL, a C1
// control or a bidi character. A terminal capture also holds the escape sequences Keel (and the
// shell) draw with, so there it is a string sequence (OSC, DCS, APC, PM: Keel sends none), a C1
// control or a bidi character; the model's own CSI sequences are among fakegw.HostileSequences.
func rawControls(out []byte, jsonl bool) string {
	s := string(out)
	for i, r := range s {
		switch {
		case jsonl && r != '\n' && (r < 0x20 || r == 0x7f):
			return fmt.Sprintf("%q at %d: %q", r, i, around(s, i))
		case !jsonl && r == 0x1b && i+1 < len(s) && strings.IndexByte("]P_^", s[i+1]) >= 0:
			return fmt.Sprintf("a string sequence at %d: %q", i, around(s, i))
		case r >= 0x80 && r <= 0x9f:
			return fmt.Sprintf("C1 %U at %d: %q", r, i, around(s, i))
		case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return fmt.Sprintf("bidi %U at %d: %q", r, i, around(s, i))
		}
	}
	return ""
}

func around(s string, i int) string { return s[max(0, i-40):min(len(s), i+40)] }

// lineWith is the screen's last line that holds text.
func lineWith(screen, text string) string {
	lines := strings.Split(screen, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], text) {
			return lines[i]
		}
	}
	return ""
}
