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

// sessionsQuery is the Web UI list query docs/operations.md gives for sessions only.
const sessionsQuery = `WorkflowType = "AgentSession" AND ExecutionStatus != "ContinuedAsNew"`

// TestWebUIListsSessionsOnly: the Web UI's workflow list, filtered with the query the docs give,
// read by a headless Chromium, shows a finished demo session and none of its turns (the
// AgentTurn children, "…/turn-N"), which the unfiltered list mixes in. With
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
