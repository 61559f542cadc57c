package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// TestSayReachesTheNextModelCallOnce sends `starter say` to a session that is waiting on a model
// call (a slow stream) and to one running a tool (a long command), then kills the worker before the
// turn ends and starts another. The message reaches the first model call after that turn and every
// later one, exactly once each; no call of the turn in flight sees it; `starter watch --output
// jsonl` shows it.
func TestSayReachesTheNextModelCallOnce(t *testing.T) {
	cases := []struct {
		name  string
		mode  string
		ready func(gw *fakegw.Server, ws string) bool
	}{
		{"waiting on a model call", fakegw.ModeSlowStream, func(gw *fakegw.Server, _ string) bool {
			return len(gw.Stats().ForMode(fakegw.ModeSlowStream)) > 0
		}},
		{"running a tool", fakegw.ModeLongCommand, func(_ *fakegw.Server, ws string) bool {
			return len(processesIn(ws, "sleep", "15")) == 1
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			sw := startScripted(t, scriptedOptions{gateway: fakegw.Options{SlowStreamDuration: 6 * time.Second}})
			gw, environ := sw.gw, sw.env
			run := sw.start(ctx, c.mode, contract.Limits{MaxTurns: 20})
			if !waitFor(60*time.Second, func() bool { return c.ready(gw, sw.ws) }) {
				t.Fatal("the turn never got to the point of the test")
			}
			text := "please keep the fix to one line (" + c.mode + ")"
			sent := len(gw.Stats().Records)
			out, err := starterIn(environ, "say", run.GetID(), text)
			if err != nil || !strings.Contains(out, "queued for the next model call") {
				t.Fatalf("starter say: %v\n%s", err, out)
			}
			sw.worker.kill()
			sw.worker.start()

			var sum contract.Summary
			if err := run.Get(ctx, &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Status != contract.StatusCompleted {
				t.Fatalf("summary %+v", sum)
			}
			recs := gw.Stats().Records
			want := contract.PersonPrefix + text
			delivered := 0
			for i, r := range recs {
				n := 0
				for _, p := range r.Persons {
					if p == want {
						n++
					}
				}
				switch {
				case i < sent && n != 0:
					t.Errorf("model call %d, sent before the message, carries it", i+1)
				case n > 1:
					t.Errorf("model call %d carries the message %d times", i+1, n)
				case n == 0 && delivered > 0:
					t.Errorf("model call %d, after the message was delivered, lacks it", i+1)
				}
				if n == 1 {
					delivered++
				}
			}
			t.Logf("%d model calls, %d before the message, %d carried it", len(recs), sent, delivered)
			if delivered == 0 {
				t.Fatalf("no model call carried the message; %d calls, %d before it was sent", len(recs), sent)
			}

			out, err = starterIn(environ, "watch", run.GetID(), "--output", "jsonl")
			if err != nil || !strings.Contains(out, `"event":"say"`) || !strings.Contains(out, text) {
				t.Errorf("starter watch --output jsonl does not show the message: %v\n%s", err, out)
			}
		})
	}
}

// starterIn runs the starter with the given environment (sharing the worker's store) and returns
// its combined output.
func starterIn(environ []string, args ...string) (string, error) {
	cmd := exec.Command(starter, args...)
	cmd.Env = environ
	out, err := cmd.CombinedOutput()
	return string(out), err
}
