// Package devserver finds, builds and starts the Temporal dev server that Keel's demo, its `dev`
// command and its integration tests run against. The server is Keel's own build of the Temporal
// server (deploy/temporal-server, a Go module of its own: the server cannot be embedded in the same
// module as the SDK Keel uses), and it always runs as its own process. It has worker commands, so an
// activity learns of its cancellation without heartbeating.
package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/contract"
)

// CLIModule is the Temporal CLI version Keel builds where a test needs the `temporal` command as a
// client: pasting the commands a waiting session shows, as a person would. Later versions do not
// build with go install (their go.mod carries a replace directive).
const CLIModule = "github.com/temporalio/cli/cmd/temporal@v1.5.1"

// Options describe the dev server to start.
type Options struct {
	// Address is host:port for the gRPC frontend; empty picks a free loopback port.
	Address   string
	Namespace string
	// UIPort serves the Web UI when non-zero.
	UIPort int
	// DBFile keeps the server's state in a SQLite file; empty keeps it in memory.
	DBFile string
	// MetricsPort serves the server's Prometheus metrics (among them the `action` counter) on
	// 127.0.0.1:MetricsPort/metrics when non-zero.
	MetricsPort int
	// Progress receives one-line progress messages (the first server build takes minutes).
	Progress io.Writer
	// Log receives the server's own output; nil discards it.
	Log io.Writer
}

// Server is a running dev server process.
type Server struct {
	cmd     *exec.Cmd
	client  client.Client
	address string
	exited  chan struct{}
}

// Start finds (or builds) the server and starts it, returning once it answers. The server
// runs in a process group of its own: a Ctrl+C or `kill -INT -- -PGID` meant for the starter must
// reach the starter alone, which then cancels its session through this server and only stops the
// server once the session has settled (Stop).
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := FindServer(ctx, opts.Progress)
	if err != nil {
		return nil, err
	}
	if opts.DBFile != "" {
		if err := os.MkdirAll(filepath.Dir(opts.DBFile), 0o755); err != nil {
			return nil, fmt.Errorf("creating the dev server's state folder: %w", err)
		}
	}
	out := opts.Log
	if out == nil {
		out = io.Discard
	}
	ns := opts.Namespace
	if ns == "" {
		ns = "default"
	}
	address := opts.Address
	if address == "" {
		if address, err = freeAddress(); err != nil {
			return nil, err
		}
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("dev server address %q: %w", address, err)
	}
	cmd := exec.Command(bin, serverArgs(opts, host, port, ns)...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = ownProcessGroup()
	s := &Server{cmd: cmd, address: address, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The kernel's parent-death signal follows the thread that started the child, so that
		// thread is kept for the server's whole life.
		runtime.LockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			_ = cmd.Wait()
			close(s.exited)
		}
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("starting the temporal dev server: %w", err)
	}
	c, err := s.waitReady(ctx, ns)
	if err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("starting the temporal dev server: %w", err)
	}
	s.client = c
	return s, nil
}

// serverArgs are the server's arguments for one dev server (the flags of `temporal server
// start-dev`, plus the metrics port).
func serverArgs(opts Options, host, port, namespace string) []string {
	args := []string{"server", "start-dev", "--ip", host, "--port", port, "--namespace", namespace,
		"--log-level", "error", "--dynamic-config-value", "frontend.enableServerVersionCheck=false"}
	if opts.UIPort != 0 {
		args = append(args, "--ui-port", strconv.Itoa(opts.UIPort))
	} else {
		args = append(args, "--headless")
	}
	if opts.DBFile != "" {
		args = append(args, "--db-filename", opts.DBFile)
	}
	if opts.MetricsPort != 0 {
		args = append(args, "--metrics-port", strconv.Itoa(opts.MetricsPort))
	}
	for _, key := range contract.SearchAttributes {
		args = append(args, "--search-attribute", key.GetName()+"="+key.GetValueType().String())
	}
	return append(args, dynamicConfigArgs()...)
}

// waitReady dials the server until it answers, the process exits, or ctx or a minute runs out.
func (s *Server) waitReady(ctx context.Context, namespace string) (client.Client, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		c, err := client.DialContext(ctx, client.Options{HostPort: s.address, Namespace: namespace, Logger: quietLogger()})
		if err == nil {
			return c, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("the server process exited: %v", s.cmd.ProcessState)
		case <-ctx.Done():
			return nil, fmt.Errorf("the server did not answer on %s: %w", s.address, err)
		case <-tick.C:
		}
	}
}

// freeAddress is a free loopback port.
func freeAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port for the dev server: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Address is the frontend's host:port.
func (s *Server) Address() string { return s.address }

// Client is a client connected to the server's namespace.
func (s *Server) Client() client.Client { return s.client }

// stopGrace is how long the server has to exit after SIGINT before it is killed.
const stopGrace = 10 * time.Second

// Stop ends the server process: SIGINT, then SIGKILL if it has not exited in time.
func (s *Server) Stop() error {
	if s.client != nil {
		s.client.Close()
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(stopGrace):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	return nil
}

// Answering reports whether something accepts TCP connections at address; the caller then talks
// gRPC to it. Reusing a running server keeps a user's dev stack and Web UI history in one place.
func Answering(address string) bool {
	conn, err := net.DialTimeout("tcp", address, 300*time.Millisecond)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// DynamicConfig holds the server settings Keel runs its dev server with, each measured in
// docs/benchmarks.md or docs/failure-handling.md. Values are JSON, as the CLI's
// --dynamic-config-value takes them (a duration is a quoted string). deploy/dynamicconfig.yaml
// carries the same values for the cluster (go test ./deploy checks).
var DynamicConfig = map[string]string{
	"system.enableActivityEagerExecution": "true",
	// Worker commands: the server pushes an activity's cancellation to the worker running it, so
	// activities heartbeat only to prove they are alive (docs/failure-handling.md).
	"system.enableCancelActivityWorkerCommand": "true",
	"frontend.WorkerCommandsEnabled":           "true",
	// The dev server's one history shard reads its transfer queue at most 20 times a second by
	// default, which put a 50 ms step under every workflow and activity task (docs/benchmarks.md).
	"history.transferProcessorMaxPollRPS":    "10000",
	"frontend.enableUpdateWorkflowExecution": "true",
	// A new timer (an activity's retry, a workflow timer) never fires earlier than now plus this
	// shift: the timer queue reads that far ahead and pushes anything due sooner past what it
	// read. The default 1 s made every retry wait under a second last about a second
	// (docs/failure-handling.md).
	"history.timerProcessorMaxTimeShift": `"1ms"`,
	// The timer queue, like the transfer queue, is read at most 20 times a second by default,
	// a 50 ms step on a timer that falls due just after a read.
	"history.timerProcessorMaxPollRPS": "10000",
	// `temporal server start-dev` rereads the cluster's search attributes from the database on
	// every call that maps them: about a third of what a watcher's describe of a running turn
	// costs the server (docs/benchmarks.md, section 13). Without it the server maps an attribute
	// registered while it runs when its namespace registry next refreshes, about a second later;
	// app.EnsureSearchAttributes waits for that before a session starts.
	"system.forceSearchAttributesCacheRefreshOnRead": "false",
}

func dynamicConfigArgs() []string {
	keys := make([]string, 0, len(DynamicConfig))
	for k := range DynamicConfig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var args []string
	for _, k := range keys {
		args = append(args, "--dynamic-config-value", k+"="+DynamicConfig[k])
	}
	return args
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// ErrNoGo is returned when a build is needed and there is no go command to run it.
var ErrNoGo = errors.New("no go command was found to build Keel's Temporal server or the tools its tests use")

// FindCLI returns the path of the temporal CLI: $KEEL_TEMPORAL_CLI when set, else the pinned
// CLIModule built once per machine into the same cache as the server (InstallTool), so every
// machine runs the version the tests were written against, and concurrent test packages wait for
// one build instead of each running one. A temporal on PATH is not used: its version is unknown.
func FindCLI(ctx context.Context, progress io.Writer) (string, error) {
	if p := os.Getenv("KEEL_TEMPORAL_CLI"); p != "" {
		return p, nil
	}
	return InstallTool(ctx, CLIModule, progress)
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
