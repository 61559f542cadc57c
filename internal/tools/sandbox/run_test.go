//go:build linux

package sandbox

import (
	"bytes"
	"testing"
)

// run runs args in a sandbox over dir and returns the output and the report.
func run(t *testing.T, cfg Config, dir string, env []string, args ...string) (string, Report) {
	t.Helper()
	var out bytes.Buffer
	rep, err := Run(cfg, dir, args, env, &out)
	if err != nil {
		t.Fatalf("running in the sandbox: %v; output %q", err, out.String())
	}
	return out.String(), rep
}

var testEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp"}
