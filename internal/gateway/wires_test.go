package gateway

import (
	"testing"

	"github.com/keelrun/keel/internal/contract"
)

// TestEveryProviderHasAWire: every provider row has a client here that answers to its name, the
// facts of its row are set, and no client is registered for a provider without a row.
func TestEveryProviderHasAWire(t *testing.T) {
	for _, row := range contract.ProviderRows {
		t.Run(row.Name, func(t *testing.T) {
			if row.DefaultModel == "" || row.BaseURL == "" || row.Doc == "" {
				t.Errorf("row %+v: DefaultModel, BaseURL and Doc must be set", row)
			}
			p, err := New(Config{Provider: row.Name, BaseURL: "http://127.0.0.1:1", APIKey: "k"})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if p.Name() != row.Name {
				t.Fatalf("the client of %s calls itself %s", row.Name, p.Name())
			}
		})
	}
	if len(wires) != len(contract.ProviderRows) {
		t.Errorf("%d clients for %d providers: a client has no row in contract.ProviderRows", len(wires), len(contract.ProviderRows))
	}
	if _, err := New(Config{Provider: "nope"}); err == nil {
		t.Error("New accepted a provider without a row")
	}
}
