package gateway

import (
	"math/rand/v2"
	"time"

	"github.com/keelrun/keel/internal/contract"
)

// Backoff computes equal-jitter retry waits. Half of each window is fixed so a retry is never
// "no wait at all"; the other half is random so that many sessions throttled at the same moment
// do not come back in lockstep.
type Backoff struct {
	// Base is the first window; zero means contract.DefaultRetryBase.
	Base time.Duration
	// Cap bounds the window; zero means contract.DefaultRetryCap.
	Cap time.Duration
	// Rand returns a number in [0, 1]; nil means math/rand/v2. Tests fix it.
	Rand func() float64
}

// Wait returns how long to wait after failed attempt number attempt (starting at 1):
// window = min(cap, base*2^(attempt-1)); wait = window/2 + rand*window/2, and never less than
// floor, the wait the server asked for (which may exceed the cap: the server knows better). When
// the floor wins, the random half-window is added on top of it: a server that tells a hundred
// sessions "retry after 1 s" must not get them back in the same millisecond.
func (b Backoff) Wait(attempt int, floor time.Duration) time.Duration {
	half := b.window(attempt) / 2
	jitter := time.Duration(float64(half) * b.random())
	if wait := half + jitter; wait >= floor {
		return wait
	}
	return floor + jitter
}

// window doubles the base attempt-1 times, stopping at the cap so large attempts cannot overflow.
func (b Backoff) window(attempt int) time.Duration {
	base, limit := b.Base, b.Cap
	if base <= 0 {
		base = contract.DefaultRetryBase
	}
	if limit <= 0 {
		limit = contract.DefaultRetryCap
	}
	w := base
	for i := 1; i < attempt && w < limit; i++ {
		w *= 2
	}
	return min(w, limit)
}

// random draws the jitter fraction, clamped to [0, 1] so a faulty source cannot shrink the wait
// below half a window or stretch it past the window.
func (b Backoff) random() float64 {
	r := rand.Float64()
	if b.Rand != nil {
		r = b.Rand()
	}
	return min(max(r, 0), 1)
}
