package devserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// ServerModule is the folder, relative to the repository root, of the Go module that builds Keel's
// Temporal server.
const ServerModule = "deploy/temporal-server"

// ErrNoServerSource is returned when neither $KEEL_TEMPORAL_SERVER nor the server's source is found.
var ErrNoServerSource = errors.New("the Temporal server's source (" + ServerModule + ") was not found; run from a Keel checkout or set KEEL_TEMPORAL_SERVER to a built temporal-server binary")

// FindServer returns the path of Keel's Temporal server binary: $KEEL_TEMPORAL_SERVER when set,
// else a cached build of deploy/temporal-server keyed by the module's content, building it first
// (with go build, saying so, because the first build takes minutes) when the cache lacks it.
// Concurrent callers (test packages run in parallel) wait for one build instead of each running one.
func FindServer(ctx context.Context, progress io.Writer) (string, error) {
	if p := os.Getenv("KEEL_TEMPORAL_SERVER"); p != "" {
		return p, nil
	}
	src, err := ServerSource()
	if err != nil {
		return "", err
	}
	key, err := contentKey(src)
	if err != nil {
		return "", err
	}
	what := "the Temporal server (" + src + ")"
	return cachedBuild(ctx, "temporal-server-"+key, what, "several minutes", progress, func(ctx context.Context, out string) error {
		return goCommand(ctx, src, nil, "build", "-o", out, ".")
	})
}

// ServerSource is the server module's folder: found from this file's location in a checkout, else
// by walking up from the working directory.
func ServerSource() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Join(filepath.Dir(file), "..", "..", ".."))
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			starts = append(starts, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, root := range starts {
		dir := filepath.Join(root, ServerModule)
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Clean(dir), nil
		}
	}
	return "", ErrNoServerSource
}

// contentKey hashes the module's go.mod, go.sum and Go files, so an edit or a version bump builds
// a new binary and a checkout that did not change reuses the old one.
func contentKey(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("reading the server's source folder: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && (n == "go.mod" || n == "go.sum" || strings.HasSuffix(n, ".go")) && !strings.HasSuffix(n, "_test.go") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	fmt.Fprintf(h, "%s/%s\n", runtime.GOOS, runtime.GOARCH)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return "", fmt.Errorf("reading the server's source: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", n, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// cacheDir is where built servers and tools are kept: $KEEL_CACHE_DIR, else the user's cache folder.
func cacheDir() (string, error) {
	dir := os.Getenv("KEEL_CACHE_DIR")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding a cache folder for the builds of the Temporal server and tools (set KEEL_CACHE_DIR): %w", err)
		}
		dir = filepath.Join(base, "keel")
	}
	// go install takes only an absolute GOBIN.
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("finding the cache folder %s: %w", dir, err)
	}
	dir = abs
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the cache folder %s: %w", dir, err)
	}
	return dir, nil
}

// cachedBuild returns the path of name in the cache folder, building it first with build when it
// is not there. The build runs under a lock file beside it, so concurrent callers (test packages
// run in parallel) wait for one build instead of each running one, and it writes to a temporary
// path renamed into place at the end, so a killed build leaves nothing that looks finished. what
// and took are for the progress lines: the first build of a tool takes minutes, and a test run
// that says nothing for that long looks hung.
func cachedBuild(ctx context.Context, name, what, took string, progress io.Writer, build func(ctx context.Context, out string) error) (string, error) {
	if progress == nil {
		progress = io.Discard
	}
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	if isExecutable(bin) {
		return bin, nil
	}
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", fmt.Errorf("creating the cache folder for %s: %w", what, err)
	}
	unlock, err := lockFile(ctx, bin+".lock", func() {
		fmt.Fprintf(progress, "keel: waiting for another process to finish building %s into %s...\n", what, bin)
	})
	if err != nil {
		return "", fmt.Errorf("building %s: %w", what, err)
	}
	defer unlock()
	if isExecutable(bin) {
		return bin, nil
	}
	fmt.Fprintf(progress, "keel: building %s into %s; the first build takes %s...\n", what, bin, took)
	start := time.Now()
	tmp := bin + ".tmp"
	if err := build(ctx, tmp); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("building %s: %w", what, err)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", fmt.Errorf("installing the built %s: %w", what, err)
	}
	fmt.Fprintf(progress, "keel: built %s in %s\n", what, time.Since(start).Round(time.Second))
	return bin, nil
}

// goCommand runs the go command in dir with args, outside any workspace and without changing the
// module's go.mod, and returns its output's tail in the error when it fails.
func goCommand(ctx context.Context, dir string, env []string, args ...string) error {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		return ErrNoGo
	}
	cmd := exec.CommandContext(ctx, gocmd, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, tail(out, 2000))
	}
	return nil
}

// InstallTool returns the path of a Go command built from module@version (a path such as
// github.com/temporalio/cli/cmd/temporal@v1.5.1), keyed in the cache by the version and the
// platform: a version bump builds a new binary, and the same version is built once per machine
// and reused. The binary keeps its command's name in a folder of its own, so that folder can go
// on a PATH. The build is go install into that folder, whatever GOBIN says.
func InstallTool(ctx context.Context, module string, progress io.Writer) (string, error) {
	pkg, version, ok := strings.Cut(module, "@")
	if !ok || version == "" {
		return "", fmt.Errorf("installing %s: the module needs an @version", module)
	}
	cmdName := path.Base(pkg)
	exe := cmdName
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	name := filepath.Join(fmt.Sprintf("%s-%s-%s-%s", cmdName, version, runtime.GOOS, runtime.GOARCH), exe)
	what := cmdName + " " + version + " (" + pkg + ")"
	return cachedBuild(ctx, name, what, "a few minutes", progress, func(ctx context.Context, out string) error {
		gobin := out + ".bin"
		if err := os.RemoveAll(gobin); err != nil {
			return fmt.Errorf("clearing %s: %w", gobin, err)
		}
		defer os.RemoveAll(gobin)
		if err := goCommand(ctx, filepath.Dir(out), []string{"GOBIN=" + gobin}, "install", module); err != nil {
			return err
		}
		return os.Rename(filepath.Join(gobin, exe), out)
	})
}
