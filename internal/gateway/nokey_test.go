package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/gateway"
)

// TestNoKeyReachesAGateway: a client built without a key (a worker on a fake gateway, or a
// gateway that authenticates otherwise) sends its requests without one, so the wiring needs no
// made-up key of its own. Every provider row, through the real SDK clients.
func TestNoKeyReachesAGateway(t *testing.T) {
	gw := startFake(t)
	for _, row := range contract.ProviderRows {
		t.Run(row.Name, func(t *testing.T) {
			p, err := gateway.New(gateway.Config{Provider: row.Name, BaseURL: gw.BaseURL() + row.APIPath, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			msgs := []contract.Message{{Role: contract.RoleUser, Content: "Say hello."}}
			if _, err := p.Stream(ctx, gateway.Request{Model: "m", Messages: msgs}, nil); err != nil {
				t.Fatalf("a call without a key: %v", err)
			}
		})
	}
}
