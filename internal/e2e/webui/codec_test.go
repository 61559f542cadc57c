package webui

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/codec"
	"github.com/keelrun/keel/internal/contract"
)

// TestWebUIDecodesWithTheCodecServer: a session run with codec.keys shows in the Web UI as
// encrypted payloads only, until the browser is given `starter codec-server`'s endpoint (the
// codec setting the UI keeps in local storage, with "override the server's setting" on, as its
// settings dialog stores them); then the session's page shows its task.
func TestWebUIDecodesWithTheCodecServer(t *testing.T) {
	// A phrase of the demo's task, which the page can only show decoded.
	const marker = "Find the bug, fix it"
	key := "KEEL_TEST_UI_CODEC_KEY=" + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x44}, codec.KeySize))
	keys := "KEEL_CODEC_KEYS=k1=env:KEEL_TEST_UI_CODEC_KEY"
	uiOrigin := fmt.Sprintf("http://127.0.0.1:%d", uiPort)
	s := startDemo(t, []string{key, keys, "KEEL_TEMPORAL_UI_URL=" + uiOrigin})
	s.waitEvent(t, 90*time.Second, contract.EventSummary)
	wid := s.workflowID(t)
	endpoint := startCodecServer(t, key, keys, "KEEL_TEMPORAL_UI_URL="+uiOrigin)

	b := startBrowser(t)
	p, err := b.open(fmt.Sprintf("%s/namespaces/default/workflows/%s", uiOrigin, wid))
	if err != nil {
		t.Fatal(err)
	}
	const text = `document.body ? document.body.innerText : ''`
	// Without the endpoint the UI shows an encrypted payload's data as it is: base64 ciphertext.
	loaded := func(v string) bool { return strings.Contains(v, "Input") && strings.Contains(v, "Result") }
	if got, ok := p.waitText(60*time.Second, text, loaded); !ok || strings.Contains(got, marker) {
		t.Fatalf("without the codec endpoint the page should show the input encrypted; it shows:\n%s", got)
	}
	if _, err := p.eval(fmt.Sprintf(`localStorage.setItem('endpoint', JSON.stringify(%q)); localStorage.setItem('overrideRemoteCodecConfiguration', 'true'); location.reload(); 'ok'`, endpoint)); err != nil {
		t.Fatal(err)
	}
	if got, ok := p.waitText(60*time.Second, text, func(v string) bool { return strings.Contains(v, marker) }); !ok {
		t.Fatalf("with the codec endpoint %s the page never showed the task; it shows:\n%s", endpoint, got)
	}
}

// startCodecServer runs `starter codec-server` on a free port with env and returns its URL once
// it says it serves.
func startCodecServer(t *testing.T, env ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(starter, "codec-server", "--codec-listen", addr)
	cmd.Env = append(envOf(t), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := regexp.MustCompile(`codec server on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		close(found)
	}()
	select {
	case u, ok := <-found:
		if !ok {
			t.Fatalf("starter codec-server ended without serving: %s", stderr.String())
		}
		return u
	case <-time.After(30 * time.Second):
		t.Fatalf("starter codec-server never said where it serves: %s", stderr.String())
	}
	return ""
}

// envOf is the environment a starter process of this test gets.
func envOf(t *testing.T) []string { return env.StarterEnv(t) }
