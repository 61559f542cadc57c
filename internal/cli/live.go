package cli

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/keelrun/keel/internal/app"
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/connect"
	"github.com/keelrun/keel/internal/events"
	"github.com/keelrun/keel/internal/store"
)

// followLive starts reading session wid's live events through c (events.Follow), from its start
// or, with fromNow, from the turn in flight. Results too large for history are in the store, which
// it opens; with codec.keys it decrypts them too (what the server sends, the client's own
// interceptor decrypts). close ends reading and closes the store.
func followLive(ctx context.Context, c client.Client, cfg config.Config, wid string, fromNow bool) (src *events.Source, close func(), err error) {
	keys, err := connect.Keys(cfg, connect.OSEnv)
	if err != nil {
		return nil, nil, err
	}
	st, err := app.OpenStore(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	o := events.FollowOptions{FromNow: fromNow, Resolve: store.Resolver(st), Namespace: cfg.Temporal.Namespace}
	if keys != nil {
		o.DataConverter = keys.DataConverter()
	}
	src = events.Follow(ctx, c, wid, o)
	return src, func() { _ = src.Close(); _ = st.Close() }, nil
}
