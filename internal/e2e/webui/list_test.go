package webui

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// taskColumns are the list's default columns with KeelTask after the workflow ID, as the
// Web UI stores them for the default namespace once a person adds the column.
const taskColumns = `{"default":[{"label":"Status","pinned":true},{"label":"Workflow ID","pinned":true},{"label":"KeelTask","pinned":false},` +
	`{"label":"Type","pinned":false},{"label":"Start","pinned":false},{"label":"End","pinned":false}]}`

// demoTask is the start of the demo's task, which the session's row shows.
const demoTask = "The tests of the Go package in the work directory fail. Find the bug, fix it, and make `go test ./...` pass."

// sessionsQuery is the Web UI list query docs/operations.md gives for sessions only.
const sessionsQuery = `WorkflowType = "AgentSession" AND ExecutionStatus != "ContinuedAsNew"`

// TestWebUIListsSessionsOnly: the Web UI's workflow list, filtered with the query the docs give,
// read by a headless Chromium, shows a finished demo session and none of its turns (the
// AgentTurn children, "…/turn-N"), which the unfiltered list mixes in; with the KeelTask column
// added, the session's row shows its task. With
// KEEL_WEBUI_SCREENSHOT set to a path it saves what it saw there as a PNG (the docs' screenshot).
func TestWebUIListsSessionsOnly(t *testing.T) {
	s := startDemo(t, nil)
	s.waitEvent(t, 120*time.Second, contract.EventSummary)
	wid := s.workflowID(t)
	b := startBrowser(t)
	list := fmt.Sprintf("http://127.0.0.1:%d/namespaces/default/workflows", uiPort)
	const body = `document.body ? document.body.innerText : ''`

	all, err := b.open(list)
	if err != nil {
		t.Fatal(err)
	}
	if raw, ok := all.waitText(60*time.Second, body, func(v string) bool { return strings.Contains(v, wid+"/turn-") }); !ok {
		t.Fatalf("the unfiltered list never showed a turn of %s (the test would prove nothing); last read:\n%s", wid, raw)
	}
	// The task column, as the list's column chooser adds it (docs/operations.md): the UI keeps
	// its columns per namespace in the browser's local storage.
	if _, err := all.eval(`localStorage.setItem('namespace-workflow-table-columns', JSON.stringify(` + taskColumns + `)), ''`); err != nil {
		t.Fatal(err)
	}
	p, err := b.open(list + "?query=" + url.QueryEscape(sessionsQuery))
	if err != nil {
		t.Fatal(err)
	}
	// A desktop's window, so the table's rows are in view.
	if err := b.call(p.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1600, "height": 700, "deviceScaleFactor": 1, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}
	raw, ok := p.waitText(60*time.Second, body, func(v string) bool { return strings.Contains(v, wid) })
	if !ok {
		t.Fatalf("the filtered list never showed %s; last read:\n%s", wid, raw)
	}
	if strings.Contains(raw, "/turn-") {
		t.Errorf("the filtered list shows turns:\n%s", raw)
	}
	// The session's row shows its task.
	row := fmt.Sprintf(`Array.from(document.querySelectorAll('tr')).map(r => r.innerText).filter(t => t.includes(%q)).join('\n')`, wid)
	task := contract.ListedTask(demoTask)
	if raw, ok := p.waitText(30*time.Second, row, func(v string) bool { return strings.Contains(v, task) }); !ok {
		t.Errorf("the session's row does not show its task %q; its row read:\n%s", task, raw)
	}
	if path := os.Getenv("KEEL_WEBUI_SCREENSHOT"); path != "" {
		var shot struct{ Data string }
		if err := b.call(p.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
			t.Fatal(err)
		}
		png, err := base64.StdEncoding.DecodeString(shot.Data)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
