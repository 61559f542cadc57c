package sandbox

import (
	"errors"
	"fmt"
	"sync"
)

// ErrBusy is returned by Command when the processes the worker's user may still start are held by
// the commands already running: starting another would leave the worker itself none.
var ErrBusy = errors.New("too many commands are running on this worker")

// Sizes of the process budget.
const (
	// budgetReserve is the least part of the worker user's process limit kept for the worker's
	// own threads and the user's other processes; a quarter of the limit when that is more.
	budgetReserve = 256
	// minShare is the fewest processes a command is started with (or its whole limit when that is
	// lower); a command that cannot get that many is refused.
	minShare = 32
)

// procBudget shares the worker user's process limit among the commands running at once. A worker
// that is not root runs its sandboxes as its own user, and the kernel counts their processes
// against that user's RLIMIT_NPROC in the host's user namespace as well as per sandbox: without a
// reserve, a fork loop in one command would leave the worker unable to start a thread.
type procBudget struct {
	mu        sync.Mutex
	unlimited bool
	limit     uint64 // the user's process limit
	total     int    // what commands may hold together
	free      int    // what they do not hold now
}

// newProcBudget sizes the budget for a user limit of limit processes; unlimited for a worker
// whose sandboxes do not count against its own limit (root, or no limit).
func newProcBudget(limit uint64, unlimited bool) *procBudget {
	if unlimited {
		return &procBudget{unlimited: true}
	}
	reserve := max(limit/4, budgetReserve)
	total := 0
	if limit > reserve {
		total = int(min(limit-reserve, 1<<31))
	}
	return &procBudget{limit: limit, total: total, free: total}
}

// take hands a command up to want processes, what is left if less, or ErrBusy when what is left
// is below the minimal share. A limit too small for any command fails with how to fix it.
func (b *procBudget) take(want int) (int, error) {
	if b.unlimited {
		return want, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	least := min(want, minShare)
	if b.total < least {
		return 0, fmt.Errorf("the worker user's process limit (%d) leaves %d processes for commands after a reserve for the worker itself, fewer than the %d a command needs; raise it (ulimit -u, or LimitNPROC= under systemd)",
			b.limit, b.total, least)
	}
	n := min(want, b.free)
	if n < least {
		return 0, ErrBusy
	}
	b.free -= n
	return n, nil
}

// give returns a share that take handed out, once the command has ended.
func (b *procBudget) give(n int) {
	if b.unlimited {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.free = min(b.free+n, b.total)
}
