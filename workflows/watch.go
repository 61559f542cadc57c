package workflows

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/keelrun/keel/internal/contract"
)

// watchState is who watches the session's live events: the leases watchers hold (watch signal,
// contract.Watch), each until a time of the workflow's clock.
type watchState struct {
	// leases are the leases taken, by watcher; taken says this session took the versionLiveWatch
	// path (it records the marker at its first lease, so unwatched sessions record nothing).
	leases []contract.Watch
	taken  bool
}

// takeWatch applies a watcher's lease: a new or renewed one runs Lease from now, a zero Lease
// gives it back. A session from before the watch signal takes none.
func (s *session) takeWatch(ctx workflow.Context, w contract.Watch) {
	if w.Watcher == "" {
		return
	}
	if !s.watch.taken {
		if !s.takes(ctx, versionLiveWatch) {
			return
		}
		s.watch.taken = true
	}
	s.watch.leases = slices.DeleteFunc(s.watch.leases, func(l contract.Watch) bool { return l.Watcher == w.Watcher })
	until := w.Until
	if w.Lease > 0 {
		until = workflow.Now(ctx).Add(w.Lease.Std())
	}
	if until.After(workflow.Now(ctx)) {
		s.watch.leases = append(s.watch.leases, contract.Watch{Watcher: w.Watcher, Until: until})
	}
}

// watched says whether a lease runs now, and forgets those that ran out.
func (s *session) watched(ctx workflow.Context) bool {
	now := workflow.Now(ctx)
	s.watch.leases = slices.DeleteFunc(s.watch.leases, func(l contract.Watch) bool { return !l.Until.After(now) })
	return len(s.watch.leases) > 0
}

// runningLeases are the leases that still run, for the next run (continue-as-new).
func (s *session) runningLeases(ctx workflow.Context) []contract.Watch {
	if !s.watched(ctx) {
		return nil
	}
	return slices.Clone(s.watch.leases)
}
