//go:build linux

package sandbox

import (
	"bytes"
	"testing"
)

// run runs args in a sandbox over dir and returns the output and the report.
func run(t *testing.T, cfg Config, dir string, env []string, args ...string) (string, Report) {
	t.Helper()
	c, err := Command(cfg, dir, args, env)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Exec.Stdout, c.Exec.Stderr = &out, &out
	err = c.Exec.Start()
	c.Started()
	if err != nil {
		t.Fatalf("starting the sandbox: %v", err)
	}
	_ = c.Exec.Wait()
	rep, ok := c.Report()
	if !ok {
		t.Fatalf("no report; output %q", out.String())
	}
	return out.String(), rep
}

var testEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp"}
