package breaker

import "time"

// Allow decides whether a call under key may run at now. A closed breaker lets every call run. An
// open one refuses until its cooldown has passed, then turns half-open and lets exactly one probe
// through; while that probe is out every other call is refused. A probe that never reports (its call
// was cancelled, so the caller recorded nothing) is given up after one more cooldown and another
// probe goes, so a lost probe cannot keep a breaker shut for ever.
func (s *State) Allow(cfg Config, key string, now time.Time) Decision {
	cfg = cfg.WithDefaults()
	i := s.find(key)
	if i < 0 {
		return Decision{Run: true, State: Closed}
	}
	b := &s.Breakers[i]
	switch b.State {
	case Open:
		if now.Before(b.RetryAt) {
			return Decision{State: Open, RetryAt: b.RetryAt}
		}
		b.State, b.ProbeAt = HalfOpen, now
		return Decision{Run: true, Probe: true, State: HalfOpen}
	case HalfOpen:
		if lost := b.ProbeAt.Add(cfg.Cooldown.Std()); now.Before(lost) {
			return Decision{State: HalfOpen, RetryAt: lost}
		}
		b.ProbeAt = now
		return Decision{Run: true, Probe: true, State: HalfOpen}
	}
	return Decision{Run: true, State: Closed}
}

// Record reports how a call that Allow let run ended. A success of the half-open probe closes the
// breaker and forgets its failures; a failure of the probe re-opens it for another cooldown. In
// the closed state each failure counts for Window, and the Failures-th one still counting opens the
// breaker. A result that arrives while the breaker is open (a call let through before it opened)
// changes nothing. Cancelled calls must not be recorded at all: a user who stops a call has not
// shown that the tool is broken.
func (s *State) Record(cfg Config, key string, now time.Time, ok bool) {
	cfg = cfg.WithDefaults()
	if ok && s.find(key) < 0 {
		return
	}
	b := s.get(key)
	b.Expires = live(b.Expires, now)
	switch {
	case b.State == HalfOpen && ok:
		*b = Breaker{Key: key, State: Closed}
	case b.State == HalfOpen:
		b.addFailure(cfg, now)
		b.open(cfg, now)
	case b.State == Closed && !ok:
		b.addFailure(cfg, now)
		if len(b.Expires) >= cfg.Failures {
			b.open(cfg, now)
		}
	}
	s.drop(key)
}

// addFailure counts a failure at now, keeping only the newest cfg.Failures of them.
func (b *Breaker) addFailure(cfg Config, now time.Time) {
	b.Expires = append(b.Expires, now.Add(cfg.Window.Std()))
	if n := len(b.Expires); n > cfg.Failures {
		b.Expires = append([]time.Time(nil), b.Expires[n-cfg.Failures:]...)
	}
}

// open refuses calls from now until the cooldown has passed.
func (b *Breaker) open(cfg Config, now time.Time) {
	b.State, b.OpenedAt, b.RetryAt, b.ProbeAt = Open, now, now.Add(cfg.Cooldown.Std()), time.Time{}
}
