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
	if progress == nil {
		progress = io.Discard
	}
	src, err := ServerSource()
	if err != nil {
		return "", err
	}
	key, err := contentKey(src)
	if err != nil {
		return "", err
	}
	dir, err := cacheDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "temporal-server-"+key)
	if isExecutable(bin) {
		return bin, nil
	}
	unlock, err := lockFile(ctx, bin+".lock")
	if err != nil {
		return "", err
	}
	defer unlock()
	if isExecutable(bin) {
		return bin, nil
	}
	return bin, build(ctx, src, bin, progress)
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

// cacheDir is where built servers are kept: $KEEL_CACHE_DIR, else the user's cache folder.
func cacheDir() (string, error) {
	dir := os.Getenv("KEEL_CACHE_DIR")
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("finding a cache folder for the Temporal server build (set KEEL_CACHE_DIR): %w", err)
		}
		dir = filepath.Join(base, "keel")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the cache folder %s: %w", dir, err)
	}
	return dir, nil
}

// build compiles the module into bin, through a temporary file so a killed build leaves nothing
// that looks finished.
func build(ctx context.Context, src, bin string, progress io.Writer) error {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building the Temporal server from %s: no go command found: %w", src, err)
	}
	fmt.Fprintf(progress, "keel: building the Temporal server (%s) into %s; the first build takes several minutes...\n", src, bin)
	start := time.Now()
	tmp := bin + ".tmp"
	cmd := exec.CommandContext(ctx, gocmd, "build", "-o", tmp, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("building the Temporal server with go build in %s: %w\n%s", src, err, tail(out, 2000))
	}
	if err := os.Rename(tmp, bin); err != nil {
		return fmt.Errorf("installing the built Temporal server: %w", err)
	}
	fmt.Fprintf(progress, "keel: Temporal server built in %s\n", time.Since(start).Round(time.Second))
	return nil
}
