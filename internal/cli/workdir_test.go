package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunRefusesWorkdirWithKeelFiles: `starter run` in a work directory that holds Keel's state,
// its store or the configuration file in use exits 2 with one line saying why, before anything
// starts (no dev server, no connection to Temporal).
func TestRunRefusesWorkdirWithKeelFiles(t *testing.T) {
	cases := []struct {
		name  string
		local string // keel.yaml written in the working directory
		env   map[string]string
		args  []string
		want  string
	}{
		{name: "keel.yaml in the default flow", local: "gateway:\n  fake: true\n", args: []string{"run", "--dev", "fix it"},
			want: "starter: the configuration file ./keel.yaml is inside the work directory, where the model can rewrite it; move it to ~/.config/keel/keel.yaml or pass --config"},
		{name: "keel.yaml that widens the sandbox cache", local: "gateway:\n  fake: true\ntools:\n  sandbox_cache: /\n", args: []string{"run", "--dev", "fix it"},
			want: "starter: config: tools.sandbox_cache: / is a system folder"},
		{name: "the state folder inside", env: map[string]string{"KEEL_GATEWAY_FAKE": "true"}, args: []string{"run", "--dev", "--state-dir", ".keel", "fix it"},
			want: "contains Keel's state directory ./.keel (dev.state_dir)"},
		{name: "the store inside, without --dev", env: map[string]string{"KEEL_GATEWAY_FAKE": "true", "KEEL_STORE_PATH": "sub/store"}, args: []string{"run", "--workdir", "sub", "fix it"},
			want: "contains the transcript store ./sub/store (store.path)"},
		{name: "the sandbox cache above", env: map[string]string{"KEEL_GATEWAY_FAKE": "true", "KEEL_TOOLS_SANDBOX_CACHE": "."}, args: []string{"run", "--dev", "--workdir", "sub", "fix it"},
			want: "tools.sandbox_cache"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			for _, k := range []string{"KEEL_CONFIG", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"} {
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			// Nothing may be reached if the check let the run through.
			t.Setenv("KEEL_TEMPORAL_ADDRESS", "127.0.0.1:1")
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			wd := t.TempDir()
			t.Chdir(wd)
			if err := os.Mkdir("sub", 0o755); err != nil {
				t.Fatal(err)
			}
			if c.local != "" {
				if err := os.WriteFile(filepath.Join(wd, "keel.yaml"), []byte(c.local), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var stdout, stderr bytes.Buffer
			code := Main(ctx, c.args, &stdout, &stderr)
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if code != ExitUsage || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Fatalf("exit %d, stderr %q; want exit %d and one line containing %q", code, stderr.String(), ExitUsage, c.want)
			}
			if _, err := os.Stat(filepath.Join(wd, ".keel")); err == nil {
				t.Fatalf("the refused run created %s", filepath.Join(wd, ".keel"))
			}
		})
	}
}
