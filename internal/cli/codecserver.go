package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/codec"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/connect"
)

// codecServerCmd serves the codec server until Ctrl+C, so the Web UI and `temporal workflow show
// --codec-endpoint` can show encrypted sessions in plain text to those who hold codec.token.
func codecServerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "codec-server",
		Short: "Serve /encode and /decode with codec.keys, for the Web UI and the temporal CLI, until Ctrl+C",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := g.loadFor(cmd, config.Starter, nil)
			if err != nil {
				return err
			}
			ctx, cancel := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer cancel()
			stop, err := startCodecServer(cfg, g.stdout)
			if err != nil {
				return err
			}
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
	config.AddFlags(cmd.Flags(), config.CodecListen)
	return cmd
}

// startCodecServer serves the codec server on codec.listen and says where; stop shuts it down.
// Without codec.keys there is nothing to decode, which is a configuration mistake here.
func startCodecServer(cfg config.Config, out io.Writer) (stop func(), err error) {
	keys, err := connect.Keys(cfg, connect.OSEnv)
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: err}
	}
	if keys == nil {
		return nil, &exitError{code: ExitUsage, err: &config.Error{Key: config.CodecKeys,
			Msg: "is empty: the codec server needs the keys sessions are encrypted with (ID=env:VARIABLE or ID=file:PATH)"}}
	}
	ln, err := net.Listen("tcp", cfg.Codec.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening for the codec server on %s (codec.listen): %w", cfg.Codec.Listen, err)
	}
	origins := codecOrigins(cfg)
	srv := &http.Server{
		Handler:           keys.Handler(codec.ServerOptions{Token: cfg.Codec.Token, Origins: origins}),
		ReadHeaderTimeout: 5 * time.Second,
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(out, "keel: the codec server stopped:", err)
		}
	}()
	auth := "no token (codec.token is empty: anyone who reaches it decodes)"
	if cfg.Codec.Token != "" {
		auth = "the codec.token bearer"
	}
	fmt.Fprintf(out, "keel: codec server on http://%s (key %s encrypts; Web UI origins %v; requires %s)\n",
		ln.Addr(), keys.EncryptingKeyID(), origins, auth)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// codecOrigins are codec.origins, or the origin of the Web UI the links point at.
func codecOrigins(cfg config.Config) []string {
	if len(cfg.Codec.Origins) > 0 {
		return cfg.Codec.Origins
	}
	u, err := url.Parse(cfg.Temporal.UIURL)
	if err != nil || u.Host == "" {
		return nil
	}
	return []string{u.Scheme + "://" + u.Host}
}
