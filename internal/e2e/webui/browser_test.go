package webui

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/devkit/testenv"
)

// browser is a headless Chromium driven through the DevTools protocol over a pipe
// (--remote-debugging-pipe: commands on its fd 3, replies on its fd 4, each a JSON text ended by
// a NUL byte). The Web UI is a JavaScript app that keeps polling the server, so --dump-dom with a
// virtual time budget never settles on its pages; asking the page for its text until it shows
// what is expected, under a deadline, does.
type browser struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	mu   sync.Mutex
	next int
}

// cdpMessage is one DevTools protocol message in either direction.
type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    any             `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     json.RawMessage `json:"error,omitempty"`
}

// chromiumFlags keep a headless Chromium to the page it is given: no first-run work, no
// background downloads, no sandbox (the tests may run as root), a profile of the test's own.
func chromiumFlags(profile string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir=" + profile,
		"--remote-debugging-pipe", "about:blank"}
}

// startBrowser starts Chromium for one test; it is killed when the test ends.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	profile, err := os.MkdirTemp("", "keel-webui-profile-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("chromium", chromiumFlags(profile)...)
	cmd.ExtraFiles = []*os.File{cmdR, repW}
	// Its own process group: Chromium's renderer and helper processes write to the profile too,
	// so all of them are stopped before the profile is removed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	cmdR.Close()
	repW.Close()
	b := &browser{cmd: cmd, in: cmdW, out: bufio.NewReader(repR)}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		cmdW.Close()
		repR.Close()
		// A helper that was killed mid-write may leave the directory busy for a moment.
		if !testenv.WaitFor(10*time.Second, func() bool { return os.RemoveAll(profile) == nil }) {
			t.Errorf("removing chromium's profile %s: %v", profile, os.RemoveAll(profile))
		}
	})
	return b
}

// call sends one command and returns its result, skipping the events in between.
func (b *browser) call(session, method string, params any, result any) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.next++
	msg, err := json.Marshal(cdpMessage{ID: b.next, Method: method, Params: params, SessionID: session})
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("sending %s to chromium: %w", method, err)
	}
	for {
		raw, err := b.out.ReadBytes(0)
		if err != nil {
			return fmt.Errorf("reading chromium's reply to %s: %w", method, err)
		}
		var m cdpMessage
		if err := json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			return fmt.Errorf("decoding chromium's reply to %s: %w", method, err)
		}
		if m.ID != b.next {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(m.Result, result)
	}
}

// page is one open tab.
type page struct {
	b       *browser
	session string
}

// open opens url in a new tab.
func (b *browser) open(url string) (*page, error) {
	var target struct{ TargetID string }
	if err := b.call("", "Target.createTarget", map[string]any{"url": url}, &target); err != nil {
		return nil, err
	}
	var att struct{ SessionID string }
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return nil, err
	}
	return &page{b: b, session: att.SessionID}, nil
}

// eval evaluates a JavaScript expression that yields a string.
func (p *page) eval(expr string) (string, error) {
	var r struct {
		Result struct {
			Value any `json:"value"`
		} `json:"result"`
	}
	if err := p.b.call(p.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r); err != nil {
		return "", err
	}
	s, _ := r.Result.Value.(string)
	return s, nil
}

// waitText evaluates expr every 200 ms until ok accepts its value or timeout passes, and returns
// the last value.
func (p *page) waitText(timeout time.Duration, expr string, ok func(string) bool) (string, bool) {
	deadline := time.Now().Add(timeout)
	var last string
	for {
		v, err := p.eval(expr)
		if err == nil {
			last = v
			if ok(v) {
				return v, true
			}
		}
		if time.Now().After(deadline) {
			return last, false
		}
		time.Sleep(200 * time.Millisecond)
	}
}
