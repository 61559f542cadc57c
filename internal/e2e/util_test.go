package e2e

import (
	"strings"
	"testing"

	"github.com/keelrun/keel/internal/devkit/fakegw"
)

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// startGateway starts a fake gateway for one test and returns its base URL.
func startGateway(t *testing.T) string {
	t.Helper()
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Close() })
	return gw.BaseURL()
}

// startFakeWorker starts a worker process on a scripted gateway of its own for the test's
// duration and returns the environment a starter joins it with.
func startFakeWorker(t *testing.T) []string {
	t.Helper()
	environ := env.StarterEnv(t, "KEEL_GATEWAY_FAKE=true", "KEEL_GATEWAY_BASE_URL="+startGateway(t)+"/v1")
	workerBin, err := env.Build("./worker")
	if err != nil {
		t.Fatal(err)
	}
	w := &workerProc{bin: workerBin, env: environ, t: t}
	w.start()
	t.Cleanup(w.kill)
	return environ
}
