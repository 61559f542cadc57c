package sandbox

import (
	"errors"
	"strings"
	"testing"
)

// TestProcBudget checks the reserve kept for the worker and the shares of concurrent commands.
func TestProcBudget(t *testing.T) {
	tests := []struct {
		name      string
		limit     uint64
		unlimited bool
		takes     []int // processes each command asks for, in order, none ending
		want      []int // what each gets, -1 for refused as busy, -2 for a limit too small
	}{
		{"no limit", 0, true, []int{512, 512, 512}, []int{512, 512, 512}},
		{"the reserve is at least 256", 300, false, []int{512}, []int{44}},
		{"the reserve is a quarter of a large limit", 4096, false, []int{512, 512, 512, 512, 512, 512, 512}, []int{512, 512, 512, 512, 512, 512, -1}},
		{"the last share is what is left", 1000, false, []int{512, 512, 512}, []int{512, 232, -1}},
		{"a share below the minimum is refused", 1400, false, []int{512, 512, 512}, []int{512, 512, -1}},
		{"a small command needs only its own limit", 300, false, []int{40, 4, 2}, []int{40, 4, -1}},
		{"a limit below the reserve leaves nothing", 200, false, []int{1}, []int{-2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newProcBudget(tt.limit, tt.unlimited)
			for i, want := range tt.takes {
				got, err := b.take(want)
				switch tt.want[i] {
				case -1:
					if !errors.Is(err, ErrBusy) {
						t.Fatalf("command %d got %d, %v; want it refused as busy", i, got, err)
					}
					continue
				case -2:
					if err == nil || errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "raise it") {
						t.Fatalf("command %d got %d, %v; want the limit called too small", i, got, err)
					}
					continue
				}
				if err != nil || got != tt.want[i] {
					t.Fatalf("command %d got %d, %v; want %d", i, got, err, tt.want[i])
				}
			}
		})
	}
}

// TestProcBudgetGive checks that a command's share comes back when it ends, and no more.
func TestProcBudgetGive(t *testing.T) {
	b := newProcBudget(1024, false) // 768 for commands
	a, _ := b.take(512)
	c, _ := b.take(512)
	if a != 512 || c != 256 {
		t.Fatalf("shares %d and %d, want 512 and 256", a, c)
	}
	if _, err := b.take(512); !errors.Is(err, ErrBusy) {
		t.Fatalf("a third command got a share: %v", err)
	}
	b.give(a)
	if got, err := b.take(512); err != nil || got != 512 {
		t.Fatalf("after one ended: %d, %v", got, err)
	}
	b.give(512)
	b.give(c)
	b.give(c) // a double give never grows the budget
	if b.free != b.total || b.total != 768 {
		t.Fatalf("free %d of %d, want all 768", b.free, b.total)
	}
}
