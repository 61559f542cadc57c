package bench

import (
	"runtime/debug"
	"testing"
)

// TestPeakRSSResets checks that PeakRSS sees a peak that has passed and that ResetPeakRSS forgets
// it, which BenchmarkHostileFileTools relies on to measure each call alone.
func TestPeakRSSResets(t *testing.T) {
	const touched = 64 << 20
	touch(touched)
	high, err := PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if high < touched {
		t.Fatalf("peak RSS %.0f MiB after touching %.0f MiB", MiB(high), MiB(touched))
	}
	debug.FreeOSMemory()
	if err := ResetPeakRSS(); err != nil {
		t.Fatal(err)
	}
	low, err := PeakRSS()
	if err != nil {
		t.Fatal(err)
	}
	if low > high-touched/2 {
		t.Fatalf("peak RSS %.0f MiB after the reset, %.0f MiB before it: the reset did not take", MiB(low), MiB(high))
	}
}

// touch makes n bytes resident and lets them go.
func touch(n int) {
	buf := make([]byte, n)
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
}
