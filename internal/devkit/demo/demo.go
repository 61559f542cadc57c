// Package demo holds the example workspace that Keel's demo agent repairs: a tiny Go module whose
// Add function subtracts, with a test that fails until it is fixed. The workspace has no
// dependencies, so its tests run with plain `go test ./...` and no network.
package demo

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// workspaceRoot is the embedded directory that CopyWorkspace copies. It lives under testdata so
// that `go test ./...` of Keel itself never builds the demo module.
const workspaceRoot = "testdata/workspace"

//go:embed testdata/workspace
var workspace embed.FS

// moduleFileStored is the name the workspace's module file is stored under: embed refuses a
// directory that contains a go.mod, so it is renamed on copy.
const moduleFileStored = "go.mod.txt"

// Names and texts the scripted model and the demo need to agree on.
const (
	// SourceFile is the file, relative to the workspace, that holds the bug.
	SourceFile = "calc.go"
	// TestFile is the workspace's test file.
	TestFile = "calc_test.go"
	// ModuleFile is the module file as it appears in a copied workspace.
	ModuleFile = "go.mod"
	// TestCommand runs the workspace's tests; run_command splits it into words, no shell.
	TestCommand = "go test ./..."
	// BuggyLine is the line of SourceFile that is wrong.
	BuggyLine = "func Add(a, b int) int { return a - b }"
	// FixedLine is what BuggyLine must become.
	FixedLine = "func Add(a, b int) int { return a + b }"
)

// FixedSource is the whole of SourceFile once fixed, so a write_file call can carry it verbatim.
const FixedSource = `// Package calc holds the small arithmetic helpers of the demo workspace.
package calc

// Add returns the sum of a and b.
func Add(a, b int) int { return a + b }

// Sub returns a minus b.
func Sub(a, b int) int { return a - b }
`

// Files lists the paths of a copied workspace, relative to its root, in lexical order.
func Files() []string {
	var names []string
	_ = fs.WalkDir(workspace, workspaceRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		names = append(names, copiedName(strings.TrimPrefix(p, workspaceRoot+"/")))
		return nil
	})
	return names
}

// Source returns the embedded (buggy) content of a workspace file by its copied name.
func Source(name string) (string, error) {
	stored := name
	if name == ModuleFile {
		stored = moduleFileStored
	}
	b, err := workspace.ReadFile(path.Join(workspaceRoot, stored))
	if err != nil {
		return "", fmt.Errorf("reading demo file %s: %w", name, err)
	}
	return string(b), nil
}

// CopyWorkspace writes a fresh copy of the demo workspace into dst, creating it. Files of the
// workspace that already exist in dst are overwritten, so a second copy resets the demo; other
// files in dst are left alone.
func CopyWorkspace(dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("creating demo workspace %s: %w", dst, err)
	}
	return fs.WalkDir(workspace, workspaceRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walking embedded demo workspace: %w", err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, workspaceRoot), "/")
		if rel == "" {
			return nil
		}
		target := filepath.Join(dst, filepath.FromSlash(copiedName(rel)))
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("creating demo directory %s: %w", target, err)
			}
			return nil
		}
		return copyFile(p, target)
	})
}

// copyFile writes one embedded file to target.
func copyFile(src, target string) error {
	b, err := workspace.ReadFile(src)
	if err != nil {
		return fmt.Errorf("reading embedded demo file %s: %w", src, err)
	}
	if err := os.WriteFile(target, b, 0o644); err != nil {
		return fmt.Errorf("writing demo file %s: %w", target, err)
	}
	return nil
}

// copiedName maps a stored name to the name it gets in a copy.
func copiedName(rel string) string {
	if path.Base(rel) == moduleFileStored {
		return path.Join(path.Dir(rel), ModuleFile)
	}
	return rel
}
