package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemovedKeyIsRefused: a removed key set in the file or by its KEEL_ variable is refused with
// what to do instead, not ignored.
func TestRemovedKeyIsRefused(t *testing.T) {
	cases := []struct {
		name, file, env string
	}{
		{"in the file", "events:\n  host: 0.0.0.0\n", ""},
		{"by the environment", "", "0.0.0.0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "keel.yaml")
			if err := os.WriteFile(path, []byte(c.file), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("KEEL_EVENTS_HOST", c.env)
			_, err := LoadFor(Starter, path, nil, nil)
			if err == nil || !strings.Contains(err.Error(), "events.host") || !strings.Contains(err.Error(), "remove it") {
				t.Fatalf("loading with events.host set: %v; want it refused, saying to remove it", err)
			}
		})
	}
}
