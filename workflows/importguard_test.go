package workflows_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// keelModule is the module path; workflow code may import only these of its packages.
const keelModule = "github.com/keelrun/keel"

var allowedKeel = []string{keelModule + "/internal/contract", keelModule + "/internal/tools/toolspec", keelModule + "/internal/metrics/record", keelModule + "/internal/tools/breaker", keelModule + "/internal/textfmt"}

// bannedImports are packages that reach the world (files, network, processes, the process's own
// output) or are nondeterministic (random numbers). Anything under net/ is banned as well.
var bannedImports = []string{
	"os", "os/exec", "os/signal", "net", "io/ioutil", "syscall", "log", "log/slog",
	"math/rand", "math/rand/v2", "crypto/rand", "unsafe", "runtime", "sync", "plugin",
}

// bannedCalls are functions that read the wall clock, sleep, print or draw random numbers,
// by package path and name ("*" for any name).
var bannedCalls = map[string][]string{
	"time":         {"Now", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker", "Since", "Until"},
	"fmt":          {"Print", "Printf", "Println"},
	"math/rand":    {"*"},
	"math/rand/v2": {"*"},
	"crypto/rand":  {"*"},
}

// guardFile returns every finding in one file's source: banned imports, banned calls, and
// statements that are never deterministic in a workflow (go, select, and channel operations on
// native channels).
func guardFile(fset *token.FileSet, name string, src any) ([]string, error) {
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	var out []string
	report := func(n ast.Node, format string, args ...any) {
		out = append(out, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
	}
	local := map[string]string{} // local import name -> path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		name := path[strings.LastIndex(path, "/")+1:]
		if path == "math/rand/v2" {
			name = "rand"
		}
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = path
		switch {
		case slices.Contains(bannedImports, path), path == "net" || strings.HasPrefix(path, "net/"):
			report(imp, "imports %s, which does I/O or is nondeterministic", path)
		case strings.HasPrefix(path, keelModule) && !slices.Contains(allowedKeel, path):
			report(imp, "imports %s; workflow code may use only contract and toolspec", path)
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n, "go statement; use workflow.Go")
		case *ast.SelectStmt:
			report(n, "select statement; use workflow.NewSelector")
		case *ast.SendStmt:
			report(n, "send on a native channel; use workflow.Channel")
		case *ast.UnaryExpr:
			if n.Op == token.ARROW {
				report(n, "receive from a native channel; use workflow.Channel")
			}
		case *ast.SelectorExpr:
			pkg, ok := n.X.(*ast.Ident)
			if !ok {
				return true
			}
			path, imported := local[pkg.Name]
			if !imported {
				return true
			}
			if names := bannedCalls[path]; slices.Contains(names, "*") || slices.Contains(names, n.Sel.Name) {
				report(n, "uses %s.%s; use the workflow package's deterministic equivalent", path, n.Sel.Name)
			}
		}
		return true
	})
	return out, nil
}

// TestWorkflowCodeDoesNoIO fails if any non-test file of the workflows package imports an I/O
// package or a Keel package other than contract and toolspec, or calls the wall clock, sleeps,
// prints, draws random numbers or starts a goroutine.
func TestWorkflowCodeDoesNoIO(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		findings, err := guardFile(fset, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, f := range findings {
			t.Error(f)
		}
	}
	if checked == 0 {
		t.Fatal("no workflow source files were checked")
	}
}

// TestImportGuardCatches proves the guard can fail: each snippet breaks one rule and must be
// reported; the clean snippet must not be.
func TestImportGuardCatches(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"os", `import "os"; var _ = os.Args`, "imports os"},
		{"net/http", `import "net/http"; var _ = http.Get`, "imports net/http"},
		{"another keel package", `import "github.com/keelrun/keel/internal/gateway"; var _ = gateway.New`, "only contract and toolspec"},
		{"log", `import "log"; func f() { log.Println() }`, "imports log"},
		{"wall clock", `import "time"; func f() { _ = time.Now() }`, "time.Now"},
		{"aliased clock", `import clock "time"; func f() { clock.Sleep(1) }`, "time.Sleep"},
		{"printing", `import "fmt"; func f() { fmt.Println("hi") }`, "fmt.Println"},
		{"random", `import "math/rand"; func f() { _ = rand.Intn(3) }`, "imports math/rand"},
		{"random v2", `import "math/rand/v2"; func f() { _ = rand.N(3) }`, "math/rand/v2.N"},
		{"goroutine", `func f() { go f() }`, "go statement"},
		{"select", `func f(c chan int) { select { case <-c: } }`, "select statement"},
		{"send", `func f(c chan int) { c <- 1 }`, "send on a native channel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			findings, err := guardFile(token.NewFileSet(), "bad.go", "package workflows\n"+c.src+"\n")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(findings, func(f string) bool { return strings.Contains(f, c.want) }) {
				t.Fatalf("want a finding with %q, got %q", c.want, findings)
			}
		})
	}
	clean := `import (
	"fmt"
	"time"
	"go.temporal.io/sdk/workflow"
	"github.com/keelrun/keel/internal/contract"
)
func f(ctx workflow.Context) string { _ = workflow.Now(ctx).Add(time.Second); return fmt.Sprintf("%s", contract.TaskQueue) }`
	findings, err := guardFile(token.NewFileSet(), "clean.go", "package workflows\n"+clean+"\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(findings) != 0 {
		t.Fatalf("clean code was reported: %q", findings)
	}
}
