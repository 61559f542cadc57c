package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnknownKeySuggests: an unknown key in the file is refused naming the file, and a near miss of
// a known key in the same section says which one was meant.
func TestUnknownKeySuggests(t *testing.T) {
	cases := []struct {
		yaml, key, want string
	}{
		{"limits:\n  max_turn: 3\n", "limits.max_turn", "(did you mean limits.max_turns?)"},
		{"gateway:\n  apikey: x\n", "gateway.apikey", "(did you mean gateway.api_key?)"},
		{"temporal:\n  task_queu: q\n", "temporal.task_queu", "(did you mean temporal.task_queue?)"},
		{"limits:\n  banana: 3\n", "limits.banana", ""},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "keel.yaml")
			if err := os.WriteFile(file, []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(file, nil, map[string]any{"gateway.fake": true})
			if err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), "unknown key in "+file) {
				t.Fatalf("got %v, want the unknown key %s in %s", err, c.key, file)
			}
			if c.want == "" && strings.Contains(err.Error(), "did you mean") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v: want %q", err, c.want)
			}
		})
	}
}
