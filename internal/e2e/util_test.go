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
