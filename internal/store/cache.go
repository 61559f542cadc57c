package store

import (
	"context"
	"slices"
	"sync"

	"github.com/keelrun/keel/internal/contract"
)

// Cached keeps the latest transcript of each active session in memory in front of a store, so a
// model call loads its transcript in time independent of its length instead of reading every
// message again. Appending moves a session's entry forward to the new head, so the cache holds
// about one entry per session a worker serves; it is bounded by max entries.
type Cached struct {
	Store
	max int

	mu    sync.Mutex
	heads map[string][]contract.Message
	order []string
}

// WithCache wraps s with a cache of at most max transcripts.
func WithCache(s Store, max int) *Cached {
	return &Cached{Store: s, max: max, heads: map[string][]contract.Message{}}
}

// Append implements Store and carries the cached transcript of parent forward.
func (c *Cached) Append(ctx context.Context, parent string, msgs []contract.Message) (string, error) {
	head, err := c.Store.Append(ctx, parent, msgs)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.heads[parent]; ok || parent == "" {
		// The session moved on: its entry moves to the new head, so the cache holds one
		// transcript per session, not one per turn.
		c.drop(parent)
		c.put(head, append(slices.Clip(prev), msgs...))
	}
	return head, nil
}

// Load implements Store from the cache when it can.
func (c *Cached) Load(ctx context.Context, head string) ([]contract.Message, error) {
	c.mu.Lock()
	msgs, ok := c.heads[head]
	c.mu.Unlock()
	if ok {
		return slices.Clone(msgs), nil
	}
	msgs, err := c.Store.Load(ctx, head)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.put(head, msgs)
	c.mu.Unlock()
	return slices.Clone(msgs), nil
}

// drop removes an entry. The caller holds mu.
func (c *Cached) drop(head string) {
	if _, ok := c.heads[head]; !ok {
		return
	}
	delete(c.heads, head)
	c.order = slices.DeleteFunc(c.order, func(h string) bool { return h == head })
}

// put adds an entry, evicting the oldest ones beyond max. The caller holds mu.
func (c *Cached) put(head string, msgs []contract.Message) {
	if _, ok := c.heads[head]; !ok {
		c.order = append(c.order, head)
	}
	c.heads[head] = msgs
	for len(c.order) > c.max {
		delete(c.heads, c.order[0])
		c.order = c.order[1:]
	}
}
