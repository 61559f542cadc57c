package app

import (
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureMapNamesEveryPackage: docs/architecture.md's package map names every production
// package of the module and names nothing that does not exist. A production package is one with
// non-test Go files that is neither under internal/devkit/ (test and demo support, which the map
// may list but need not) nor a test helper (its non-test files import "testing"). Every folder
// the map names, package or not (docs/, deploy/temporal-server/), must exist. Nesting in the map
// is by indentation, two spaces a level.
func TestArchitectureMapNamesEveryPackage(t *testing.T) {
	named := packageMap(t, "../../docs/architecture.md")
	for _, dir := range named {
		if info, err := os.Stat("../../" + dir); err != nil || !info.IsDir() {
			t.Errorf("docs/architecture.md's package map names %s/, which does not exist", dir)
		}
	}
	for _, pkg := range productionPackages(t) {
		if !slices.Contains(named, pkg) {
			t.Errorf("docs/architecture.md's package map misses %s/", pkg)
		}
	}
}

// packageMap reads the folders the code block under "## Package map" names, as paths from the
// module's root.
func packageMap(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "\n## Package map\n")
	if !ok {
		t.Fatalf("%s has no package map", file)
	}
	_, block, _ := strings.Cut(after, "```\n")
	block, _, _ = strings.Cut(block, "```")
	var stack, dirs []string
	for line := range strings.SplitSeq(block, "\n") {
		name := strings.TrimLeft(line, " ")
		indent := len(line) - len(name)
		first, _, _ := strings.Cut(name, " ")
		// An entry's name ends in a slash and sits at most a few levels deep; deeper lines
		// continue the description of the entry above.
		if !strings.HasSuffix(first, "/") || indent%2 != 0 || indent > 8 {
			continue
		}
		level := indent / 2
		if level > len(stack) {
			t.Fatalf("%q is indented below no entry", line)
		}
		stack = append(stack[:level], strings.TrimSuffix(first, "/"))
		dirs = append(dirs, path.Join(stack...))
	}
	if len(dirs) == 0 {
		t.Fatalf("%s's package map names no folder", file)
	}
	return dirs
}

// productionPackages lists the module's production packages as paths from the module's root.
func productionPackages(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{len .GoFiles}} {{join .Imports " "}}`, "../../...").CombinedOutput()
	if err != nil {
		t.Fatalf("listing the module's packages: %v\n%s", err, out)
	}
	const module = "github.com/keelrun/keel"
	var pkgs []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		dir := strings.TrimPrefix(strings.TrimPrefix(f[0], module), "/")
		switch {
		case f[1] == "0", dir == "", strings.HasPrefix(dir, "internal/devkit/"), slices.Contains(f[2:], "testing"):
			continue
		}
		pkgs = append(pkgs, dir)
	}
	if len(pkgs) == 0 {
		t.Fatalf("no production package in:\n%s", out)
	}
	return pkgs
}
