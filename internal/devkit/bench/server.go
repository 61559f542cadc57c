package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/devserver"
)

// Server is a dev server started with a chosen dynamic configuration. devserver.Start always
// applies Keel's own devserver.DynamicConfig; comparing settings needs servers with and without
// each value, so this starts the same server binary with exactly the values given.
type Server struct {
	dev *testsuite.DevServer
	// Dynamic is the dynamic configuration the server runs with, beyond the server's own defaults.
	Dynamic map[string]string
	// metricsPort serves the server's Prometheus metrics (MetricsURL).
	metricsPort int
}

// KeelDynamicConfig is a copy of the values Keel's dev server runs with, plus extra.
func KeelDynamicConfig(extra map[string]string) map[string]string {
	out := maps.Clone(devserver.DynamicConfig)
	maps.Copy(out, extra)
	return out
}

// StartServer starts a dev server on a free loopback port, in memory, with dyn as its dynamic
// configuration.
func StartServer(ctx context.Context, dyn map[string]string) (*Server, error) {
	bin, err := devserver.FindServer(ctx, io.Discard)
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"--metrics-port", strconv.Itoa(port)}
	for _, k := range slices.Sorted(maps.Keys(dyn)) {
		args = append(args, "--dynamic-config-value", k+"="+dyn[k])
	}
	// Every search attribute a session may start with, the shipped starter's among them.
	for _, key := range contract.SearchAttributes {
		args = append(args, "--search-attribute", key.GetName()+"="+key.GetValueType().String())
	}
	dev, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath:  bin,
		ClientOptions: &client.Options{Namespace: "default", Logger: quietLogger()},
		LogLevel:      "error",
		ExtraArgs:     args,
		Stdout:        io.Discard,
		Stderr:        io.Discard,
	})
	if err != nil {
		return nil, fmt.Errorf("starting a dev server with %v: %w", dyn, err)
	}
	return &Server{dev: dev, Dynamic: dyn, metricsPort: port}, nil
}

// MetricsURL is where the server serves its Prometheus metrics, the `action` counter among them.
func (s *Server) MetricsURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/metrics", s.metricsPort)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port for the server's metrics: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Address is the server's frontend host:port.
func (s *Server) Address() string { return s.dev.FrontendHostPort() }

// Client is the server's shared client of the default namespace.
func (s *Server) Client() client.Client { return s.dev.Client() }

// Stop ends the server process.
func (s *Server) Stop() error { return s.dev.Stop() }

func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}
