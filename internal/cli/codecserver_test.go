package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/codec"
	"github.com/keelrun/keel/internal/config"
)

// TestCodecServerNeedsKeys: without codec.keys the command stops at once, naming the key.
func TestCodecServerNeedsKeys(t *testing.T) {
	t.Setenv("KEEL_CODEC_KEYS", "")
	cases := []struct {
		name, keys, want string
	}{
		{"no key", "", "config: codec.keys: is empty"},
		{"key variable unset", "k1=env:KEEL_TEST_NO_SUCH_KEY", "KEEL_TEST_NO_SUCH_KEY is not set"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("KEEL_CODEC_KEYS", c.keys)
			var out, errOut bytes.Buffer
			code := Main(context.Background(), []string{"codec-server", "--codec-listen", "127.0.0.1:0", "--state-dir", t.TempDir()}, &out, &errOut)
			if code != ExitUsage || !strings.Contains(errOut.String(), c.want) || strings.Count(errOut.String(), "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want %d and one line with %q", code, errOut.String(), ExitUsage, c.want)
			}
		})
	}
}

// TestCodecServerServes starts the codec server as `starter codec-server` and `starter dev` do:
// it answers the Web UI's origin, and decodes only with the token.
func TestCodecServerServes(t *testing.T) {
	t.Setenv("KEEL_TEST_CODEC_KEY", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, codec.KeySize)))
	var cfg config.Config
	cfg.Codec = config.Codec{Keys: []string{"k1=env:KEEL_TEST_CODEC_KEY"}, Listen: "127.0.0.1:0", Token: "tok"}
	cfg.Temporal.UIURL = "http://127.0.0.1:8233"
	var out bytes.Buffer
	stop, err := startCodecServer(cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m := regexp.MustCompile(`codec server on (http://\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no address in %q", out.String())
	}
	cases := []struct {
		name, auth string
		status     int
	}{
		{"with the token", "Bearer tok", http.StatusOK},
		{"without", "", http.StatusUnauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, m[1]+"/decode", strings.NewReader(`{"payloads":[]}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", "http://127.0.0.1:8233")
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status || resp.Header.Get("Access-Control-Allow-Origin") != "http://127.0.0.1:8233" {
				t.Fatalf("status %d, CORS %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
			}
		})
	}
}
