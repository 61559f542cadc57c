// Package devstack brings up the local dev stack the starter's demo, dev and run --dev commands
// use: a Temporal dev server and the fake model gateway. It lives with the rest of the dev kit so
// that production programs (the worker, the Slack bot) link neither.
package devstack

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/devkit/devserver"
	"github.com/keelrun/keel/internal/devkit/fakegw"
)

// Stack is the local dev stack: a Temporal dev server (started here, or one that already answered)
// and the fake gateway.
type Stack struct {
	// Server is the dev server this process started; nil when an existing one was reused.
	Server *devserver.Server
	// DBFile is where the started server keeps its state.
	DBFile  string
	Gateway *fakegw.Server
	// gatewayURL is a fake gateway that was already running.
	gatewayURL string
}

// Start brings up what the dev stack lacks. A server that already answers on the configured
// address is reused, so a user's Web UI history stays in one place.
func Start(ctx context.Context, cfg config.Config, progress io.Writer) (*Stack, error) {
	st := &Stack{}
	if !devserver.Answering(cfg.Temporal.Address) {
		st.DBFile = filepath.Join(cfg.Dev.StateDir, "temporal.db")
		abs, err := filepath.Abs(st.DBFile)
		if err == nil {
			st.DBFile = abs
		}
		fmt.Fprintf(progress, "keel: starting a Temporal dev server on %s (state in %s, Web UI on port %d)\n", cfg.Temporal.Address, st.DBFile, cfg.Dev.UIPort)
		if cfg.Dev.MetricsPort != 0 {
			fmt.Fprintf(progress, "keel: the dev server's Prometheus metrics: http://127.0.0.1:%d/metrics\n", cfg.Dev.MetricsPort)
		}
		srv, err := devserver.Start(ctx, devserver.Options{
			Address: cfg.Temporal.Address, Namespace: cfg.Temporal.Namespace,
			UIPort: cfg.Dev.UIPort, MetricsPort: cfg.Dev.MetricsPort, DBFile: st.DBFile, Progress: progress,
		})
		if err != nil {
			return nil, err
		}
		st.Server = srv
	}
	if cfg.Gateway.BaseURL != "" {
		// A fake gateway already runs elsewhere (gateway.base_url names it): use that one.
		st.gatewayURL = cfg.Gateway.BaseURL
		return st, nil
	}
	gw := fakegw.New(fakegw.Options{})
	if err := gw.Start("127.0.0.1:0"); err != nil {
		st.Close()
		return nil, fmt.Errorf("starting the fake gateway: %w", err)
	}
	st.Gateway = gw
	return st, nil
}

// GatewayURL is the base URL the configured provider's client uses to reach the fake gateway.
func (s *Stack) GatewayURL(provider string) string {
	if s.gatewayURL != "" {
		return s.gatewayURL
	}
	return FakeGatewayURL(s.Gateway, provider)
}

// FakeGatewayURL is the base URL for provider's client: the fake's root and the provider's API
// path (contract.Provider.APIPath: OpenAI clients include /v1).
func FakeGatewayURL(gw *fakegw.Server, provider string) string {
	p, _ := contract.ProviderNamed(provider)
	return gw.BaseURL() + p.APIPath
}

// Close stops what this process started.
func (s *Stack) Close() {
	if s.Gateway != nil {
		_ = s.Gateway.Close()
	}
	if s.Server != nil {
		_ = s.Server.Stop()
	}
}
