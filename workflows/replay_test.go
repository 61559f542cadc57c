package workflows_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/keelrun/keel/internal/devkit/replay"
)

// historiesDir holds histories recorded from real runs against a dev server (see
// internal/devkit/replay's TestRecordHistories, run with KEEL_RECORD_HISTORIES=1).
const historiesDir = "testdata/histories"

// TestReplayRecordedHistories replays every recorded session and turn history against the current
// workflow code. A failure means a change would break sessions already running: make the change
// replay-safe (workflow.GetVersion) or, if no such session can exist, record the fixtures again.
func TestReplayRecordedHistories(t *testing.T) {
	replayEveryFixture(t)
}

// replayEveryFixture replays each history under historiesDir, one subtest a file.
func replayEveryFixture(t *testing.T) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(historiesDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sessions, turns int
	for _, f := range files {
		switch {
		case strings.HasSuffix(f, "-session.json"):
			sessions++
		case strings.Contains(f, "-turn-"):
			turns++
		}
	}
	if sessions == 0 || turns == 0 {
		t.Fatalf("want recorded session and turn histories in %s, found %d files", historiesDir, len(files))
	}
	r := replay.NewReplayer()
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			if err := replay.ReplayFile(r, f); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestReplayDetectsNondeterminism proves the replay test can fail: a recorded session whose first
// turn was started under another workflow type no longer matches what the code does.
func TestReplayDetectsNondeterminism(t *testing.T) {
	src := filepath.Join(historiesDir, "plain-session.json")
	f, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	for _, ev := range hist.GetEvents() {
		if a := ev.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			a.GetWorkflowType().Name = "SomeOtherTurn"
			changed = true
			break
		}
	}
	if !changed {
		t.Fatalf("%s starts no child workflow", src)
	}
	data, err := protojson.Marshal(hist)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "tampered-session.json")
	if err := os.WriteFile(bad, data, 0o644); err != nil {
		t.Fatal(err)
	}
	err = replay.ReplayFile(replay.NewReplayer(), bad)
	if err == nil {
		t.Fatal("a history whose child workflow type changed replayed without error")
	}
	if !strings.Contains(err.Error(), "TMPRL1100") && !strings.Contains(strings.ToLower(err.Error()), "nondetermin") {
		t.Fatalf("want a nondeterminism error, got %v", err)
	}
}
