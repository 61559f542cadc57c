package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFilesAreCurrent fails while docs/configuration.md's key table or keel.example.yaml
// differs from what the key table makes: change internal/config/keys.go, then run
// `go generate ./internal/config` and commit both.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, err := generate(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s is stale: run `go generate ./internal/config` and commit it", name)
		}
	}
}

// TestPlain: strings YAML would read as something else are quoted.
func TestPlain(t *testing.T) {
	cases := map[string]bool{
		"127.0.0.1:7233": true, "gpt-4o-mini": true, "200ms": true, "https://api.github.com": true,
		"": false, "on": false, "off": false, "true": false, "0.5": false, "12": false, "-x": false, "a: b": false, "*": false,
	}
	for v, want := range cases {
		if got := plain(v); got != want {
			t.Errorf("plain(%q) = %v, want %v", v, got, want)
		}
	}
}
