package cli

import (
	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/connect"
	"github.com/keelrun/keel/internal/events"
)

// listenSink opens the sink a follower reads live events from; with codec.keys it opens the
// events workers encrypt with them.
func listenSink(cfg config.Config) (*events.Sink, error) {
	keys, err := connect.Keys(cfg, connect.OSEnv)
	if err != nil {
		return nil, err
	}
	return events.ListenWith(cfg.Events.Host, keys)
}
