package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// shutdownGrace bounds how long Serve waits for a scrape in flight once its context ends.
const shutdownGrace = 5 * time.Second

// Serve exposes the metrics at Path on addr (the config key metrics.address, such as
// 127.0.0.1:9464; port 0 picks a free port) until ctx ends. It returns once the port is bound, with
// the bound address, so a caller can log or dial it.
func (m *Metrics) Serve(ctx context.Context, addr string) (net.Addr, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for metric scrapes on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, m.HTTPHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			slog.Error("serving metrics", "address", ln.Addr().String(), "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr(), nil
}
