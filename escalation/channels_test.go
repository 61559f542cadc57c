package escalation

import (
	"slices"
	"testing"

	"github.com/keelrun/keel/internal/config"
	"github.com/keelrun/keel/internal/contract"
)

// TestChannelRows: every channel the configuration accepts has a row, in the same order, and each
// row builds a notifier that answers to the row's name.
func TestChannelRows(t *testing.T) {
	var names []string
	for _, ch := range channels {
		names = append(names, ch.Name)
	}
	if !slices.Equal(names, contract.Channels) {
		t.Fatalf("channel rows %v, contract.Channels %v: a channel needs both", names, contract.Channels)
	}
	cfg := config.Escalation{}
	cfg.Channels = append([]string{"pager"}, contract.Channels...)
	got := Notifiers(cfg)
	if len(got) != len(contract.Channels) {
		t.Fatalf("Notifiers built %d notifiers for %v, want one per known channel", len(got), cfg.Channels)
	}
	for _, name := range contract.Channels {
		if n := got[name]; n == nil || n.Name() != name {
			t.Errorf("channel %s: notifier %v does not answer to its name", name, n)
		}
	}
}
