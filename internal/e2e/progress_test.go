package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// TestWatchMidTurnShowsTheCall: a `starter watch` attached while a command runs shows that call
// (its line, then the status line naming it and counting its seconds) before the result, not
// "starting" and a result with no call above it.
func TestWatchMidTurnShowsTheCall(t *testing.T) {
	environ := env.StarterEnv(t)
	origin := startLiveEnv(t, environ, "demo", "--inject", "long_command", "--output", "jsonl")
	call := origin.waitEvent(90*time.Second, "the sleep 15 call", func(e contract.Event) bool {
		return e.Event == contract.EventToolCall && strings.Contains(e.Arguments, "sleep 15")
	})
	wid := origin.workflowID()

	s := startShell(t, environ)
	s.typeLine(starter + " watch " + wid + `; echo "exit=$?"`)
	status := regexp.MustCompile(`run_command sleep 15 ` + durationRE + ` · session`)
	sc := s.waitScreen(20*time.Second, "the status line naming the running command", func(sc string) bool { return status.MatchString(sc) })
	if !regexp.MustCompile(`→ run_command .*sleep 15`).MatchString(sc) {
		t.Errorf("no line for the call in flight above the status line:\n%s", sc)
	}
	if regexp.MustCompile(`starting ` + durationRE + ` · session`).MatchString(sc) {
		t.Errorf("the watch said starting while the command ran:\n%s", sc)
	}
	if code := s.waitExit(60 * time.Second); code != "0" {
		t.Fatalf("watch exit %s, want 0:\n%s", code, s.screen())
	}
	// The call's result follows its line, before the next call.
	sc = s.screen()
	at := regexp.MustCompile(`→ run_command .*sleep 15`).FindStringIndex(sc)
	if at == nil {
		t.Fatalf("the watch's output lost the call line:\n%s", sc)
	}
	next, _, _ := strings.Cut(sc[at[1]:], "→ ")
	if !strings.Contains(next, "✓ The command finished") {
		t.Errorf("the watch shows no result under the call %s it attached during:\n%s", call.CallID, sc)
	}
	if r := origin.finish(); r.Code != 0 {
		t.Fatalf("the session ended %d:\n%s", r.Code, r.Stderr)
	}
}

// TestStreamingReplyShowsProgress: while a reply streams, the status line stays on screen under
// it, with the spinner, "esc to interrupt" and the tokens counted as they stream, marked as an
// estimate; Esc still cancels.
func TestStreamingReplyShowsProgress(t *testing.T) {
	s := startShell(t, env.StarterEnv(t))
	s.typeLine(starter + ` demo --inject slow_stream; echo "exit=$?"`)
	status := regexp.MustCompile(`[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] model (call|reply) ` + durationRE + ` · session ` + durationRE + ` · ~[1-9]\d* tokens · esc to interrupt`)
	s.waitScreen(90*time.Second, "the status line under the streaming reply", func(sc string) bool { return status.MatchString(sc) })
	s.key("Escape")
	if code := s.waitExit(30 * time.Second); code != "130" {
		t.Fatalf("exit %s after Esc, want 130:\n%s", code, s.screen())
	}
}
