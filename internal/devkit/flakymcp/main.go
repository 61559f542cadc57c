// Command flakymcp is an MCP server for demos and tests of the circuit breaker. It serves
// flaky_lookup, which always fails with "lookup backend unavailable", echo, which works, and wait.
// It speaks stdio by default and streamable HTTP with --http ADDR.
//
//	go run ./internal/flakymcp
//	go run ./internal/flakymcp --http 127.0.0.1:8931
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keelrun/keel/internal/devkit/flakymcp/flaky"
)

func main() {
	addr := flag.String("http", "", "serve streamable HTTP on this address (host:port) instead of stdio")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "flakymcp:", err)
		os.Exit(1)
	}
}

// run serves the flaky server until ctx ends or, on stdio, the client closes its side.
func run(ctx context.Context, addr string) error {
	s := flaky.NewServer(nil)
	if addr == "" {
		if err := s.Run(ctx, &mcp.StdioTransport{}); err != nil && ctx.Err() == nil {
			return fmt.Errorf("serving stdio: %w", err)
		}
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	fmt.Fprintf(os.Stderr, "flakymcp: serving streamable HTTP on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: flaky.Handler(s), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serving HTTP: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("stopping HTTP: %w", err)
	}
	return nil
}
