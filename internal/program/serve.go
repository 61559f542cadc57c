package program

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// shutdownWait bounds how long a stopping bot waits for requests in flight.
const shutdownWait = 10 * time.Second

// Serve serves h on ln until ctx is done, then stops taking requests and, once those in flight
// are answered, calls wait (the bot's background work on what it accepted) before returning.
// name says what is served in the log line and in errors ("slack bot").
func Serve(ctx context.Context, name string, h http.Handler, ln net.Listener, wait func(), logger *slog.Logger, attrs ...any) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	logger.Info(name+" listening", append([]any{"addr", ln.Addr().String()}, attrs...)...)
	select {
	case err := <-done:
		wait()
		return fmt.Errorf("serving the %s: %w", name, err)
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	err := srv.Shutdown(shutCtx)
	wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutting down the %s: %w", name, err)
	}
	return nil
}
