package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadTask(t *testing.T) {
	file := filepath.Join(t.TempDir(), "task.md")
	if err := os.WriteFile(file, []byte("fix the failing test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blank := filepath.Join(t.TempDir(), "blank.md")
	if err := os.WriteFile(blank, []byte(" \n\t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		args  []string
		file  string
		stdin string
		want  string
		err   string // a usage error containing this
	}{
		{name: "argument", args: []string{"say hi"}, want: "say hi"},
		{name: "file", file: file, want: "fix the failing test\n"},
		{name: "standard input", file: "-", stdin: "from stdin", want: "from stdin"},
		{name: "empty argument", args: []string{""}, err: "empty"},
		{name: "blank argument", args: []string{"  \t "}, err: "empty"},
		{name: "blank file", file: blank, err: "empty"},
		{name: "empty standard input", file: "-", err: "empty"},
		{name: "missing file", file: filepath.Join(t.TempDir(), "nope"), err: "--task-file"},
		{name: "none", err: "no task"},
		{name: "both", args: []string{"x"}, file: file, err: "not both"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := readTask(c.args, c.file, strings.NewReader(c.stdin))
			if c.err != "" {
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want a usage error containing %q, got %v", c.err, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestResolveWorkdir(t *testing.T) {
	here := t.TempDir()
	file := filepath.Join(here, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(here)
	if err := os.Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		dir       string
		dev       bool
		want      string
		onWorkers bool
		err       string
	}{
		{name: "relative here", dir: "sub", want: filepath.Join(here, "sub")},
		{name: "absolute here", dir: here, want: here},
		{name: "absolute on the workers", dir: "/workspace-not-here", want: "/workspace-not-here", onWorkers: true},
		{name: "absolute missing with --dev", dir: "/workspace-not-here", dev: true, err: "--dev"},
		{name: "relative missing", dir: "nope", err: "absolute path"},
		{name: "a file", dir: file, err: "a file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, onWorkers, err := resolveWorkdir(c.dir, c.dev)
			if c.err != "" {
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != ExitUsage || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("want a usage error containing %q, got %v", c.err, err)
				}
				return
			}
			if err != nil || got != c.want || onWorkers != c.onWorkers {
				t.Fatalf("got %q, %t, %v; want %q, %t", got, onWorkers, err, c.want, c.onWorkers)
			}
		})
	}
}
