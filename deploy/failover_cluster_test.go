package deploy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/config"
)

// temporalPortOffsets are the ports run-cluster.sh derives from the frontend port P: P itself, the
// history, matching and worker services, the HTTP API, the four membership ports and the server's
// metrics.
var temporalPortOffsets = []int{0, 1, 2, 6, 10, -300, -299, -298, -294, 767}

// testCluster is a cluster that deploy/run-cluster.sh started for one test, on its own ports,
// state folder and databases, so it can run beside a developer's cluster on the same machine.
type testCluster struct {
	t            *testing.T
	dir          string // KEEL_CLUSTER_DIR
	temporalPort int
	gatewayPort  int
	metricsPort  int // worker-1's; worker-2 serves on the next port
	dbPrefix     string
	env          []string // what every script run gets
}

// newTestCluster picks free ports and a database prefix, and prepares a private bin folder that
// links to already built Temporal server binaries (building them once, into the shared folder,
// when they are missing). Extra environment (KEEL_CLUSTER_EFFECT_LOG, say) reaches the script.
func newTestCluster(t *testing.T, dir string, extra ...string) *testCluster {
	t.Helper()
	used := map[int]bool{}
	c := &testCluster{t: t, dir: dir, dbPrefix: fmt.Sprintf("keel_failover_%d", os.Getpid())}
	c.temporalPort = freePortBlock(t, temporalPortOffsets, used)
	c.gatewayPort = freePortBlock(t, []int{0}, used)
	c.metricsPort = freePortBlock(t, []int{0, 1}, used)
	bin := filepath.Join(dir, "bin")
	c.env = append(clusterBaseEnv(),
		"KEEL_CLUSTER_DIR="+dir,
		"KEEL_CLUSTER_BIN="+bin,
		"KEEL_CLUSTER_DB_PREFIX="+c.dbPrefix,
		"KEEL_CLUSTER_TEMPORAL_PORT="+strconv.Itoa(c.temporalPort),
		"KEEL_CLUSTER_GATEWAY_PORT="+strconv.Itoa(c.gatewayPort),
		"KEEL_CLUSTER_METRICS_PORT="+strconv.Itoa(c.metricsPort),
		"KEEL_CLUSTER_WORKERS=2",
	)
	c.env = append(c.env, extra...)
	c.linkServerBinaries(bin)
	return c
}

// clusterBaseEnv is the test's environment without KEEL_* variables that could point the workers
// elsewhere; the PostgreSQL login and the readiness timeout are kept.
func clusterBaseEnv() []string {
	keep := map[string]bool{
		"KEEL_CLUSTER_PG_PORT": true, "KEEL_CLUSTER_PG_USER": true, "KEEL_CLUSTER_PG_PASSWORD": true,
		"KEEL_CLUSTER_TIMEOUT": true, "KEEL_CACHE_DIR": true, "KEEL_TEMPORAL_SERVER": true,
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "KEEL_") && !keep[k] {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// linkServerBinaries makes bin/temporal-server (and bin/temporal, when the shared folder has a
// CLI) links to the shared build ($KEEL_CLUSTER_BIN, else the default cluster's bin folder), so the
// test never rebuilds the server and never overwrites the shared folder's starter and worker.
func (c *testCluster) linkServerBinaries(bin string) {
	c.t.Helper()
	shared := os.Getenv("KEEL_CLUSTER_BIN")
	if shared == "" {
		state, err := config.DefaultStateDir()
		if err != nil {
			c.t.Fatal(err)
		}
		shared = filepath.Join(state, "cluster", "bin")
	}
	c.script(20*time.Minute, "run-cluster.sh", []string{"KEEL_CLUSTER_BIN=" + shared}, "build")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		c.t.Fatal(err)
	}
	for _, name := range []string{"temporal-server", "temporal"} {
		if _, err := os.Stat(filepath.Join(shared, name)); name == "temporal" && err != nil {
			continue
		}
		if err := os.Symlink(filepath.Join(shared, name), filepath.Join(bin, name)); err != nil {
			c.t.Fatalf("linking the built %s: %v", name, err)
		}
	}
}

// up runs run-cluster.sh. The caller registers down first, so a half-started cluster is stopped too.
func (c *testCluster) up() {
	c.t.Helper()
	c.t.Logf("run-cluster.sh: temporal 127.0.0.1:%d, gateway %d, metrics %d and %d, databases %s_*",
		c.temporalPort, c.gatewayPort, c.metricsPort, c.metricsPort+1, c.dbPrefix)
	c.script(15*time.Minute, "run-cluster.sh", nil)
}

// down stops the cluster and drops its databases; on failure it first shows the end of each log.
func (c *testCluster) down() {
	c.t.Helper()
	if c.t.Failed() {
		c.showLogs()
	}
	c.script(2*time.Minute, "stop-cluster.sh", nil, "--reset")
}

// script runs one of the deploy scripts with the cluster's environment plus extra, failing the
// test with its output when it fails.
func (c *testCluster) script(timeout time.Duration, name string, extra []string, args ...string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{name}, args...)...)
	cmd.Env = append(append([]string{}, c.env...), extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	c.t.Logf("%s %v:\n%s", name, args, strings.TrimRight(string(out), "\n"))
}

// temporalCLI is the CLI the scripts use: the one on PATH, else the one in bin/.
func (c *testCluster) temporalCLI() string {
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	return filepath.Join(c.dir, "bin", "temporal")
}

func (c *testCluster) address() string { return fmt.Sprintf("127.0.0.1:%d", c.temporalPort) }

// workerMetricsURL is the /metrics address of worker i (1-based).
func (c *testCluster) workerMetricsURL(i int) string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", c.metricsPort+i-1)
}

// pid reads run/NAME.pid.
func (c *testCluster) pid(name string) int {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, "run", name+".pid"))
	if err != nil {
		c.t.Fatalf("reading the pid file of %s: %v", name, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		c.t.Fatalf("the pid file of %s: %v", name, err)
	}
	return pid
}

// kill sends SIGKILL to the process of a pid file and waits until it is gone.
func (c *testCluster) kill(ctx context.Context, name string) int {
	c.t.Helper()
	pid := c.pid(name)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		c.t.Fatalf("killing %s (pid %d): %v", name, pid, err)
	}
	err := waitFor(ctx, 10*time.Second, func() (bool, error) { return !processRunning(pid), nil })
	if err != nil {
		c.t.Fatalf("%s (pid %d) survived SIGKILL: %v", name, pid, err)
	}
	return pid
}

// processRunning is true while pid is a process that has not exited (a zombie has).
func processRunning(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

func (c *testCluster) showLogs() {
	logs, _ := filepath.Glob(filepath.Join(c.dir, "log", "*.log"))
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil || filepath.Base(l) == "schema.log" {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		c.t.Logf("--- last lines of %s ---\n%s", filepath.Base(l), strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
}

// freePortBlock finds a base port whose base+offset ports are all free on 127.0.0.1 and not in
// used, and marks them used. Ports stay below 32768: the Temporal server keeps its membership ports
// in a smallint column, and Linux hands out ephemeral ports from 32768 up.
func freePortBlock(t *testing.T, offsets []int, used map[int]bool) int {
	t.Helper()
	for range 200 {
		base := 20400 + rand.IntN(11500)
		ok := true
		for _, o := range offsets {
			if used[base+o] || !portFree(base+o) {
				ok = false
				break
			}
		}
		if ok {
			for _, o := range offsets {
				used[base+o] = true
			}
			return base
		}
	}
	t.Fatalf("no free ports for offsets %v", offsets)
	return 0
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// errTimedOut is what waitFor returns when the condition never held.
var errTimedOut = errors.New("timed out")

// waitFor polls cond every 100 ms until it holds, returns an error, ctx ends or limit passes.
func waitFor(ctx context.Context, limit time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w after %s", errTimedOut, limit)
		case <-tick.C:
		}
	}
}
