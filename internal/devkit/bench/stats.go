package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Percentile returns the q-quantile (0..1) of ds by nearest rank, or 0 for none.
func Percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s)) + 0.5)
	return s[min(max(i-1, 0), len(s)-1)]
}

// Ms is d in milliseconds, as a float for reports.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// RSS reads this process's resident set size from /proc/self/status (VmRSS). The worker runs in
// the benchmark's own process, so this is the worker's memory plus the benchmark's bookkeeping.
func RSS() (int64, error) { return statusBytes("VmRSS:") }

// PeakRSS reads the highest resident set size this process has had since it started or since
// the last ResetPeakRSS (VmHWM in /proc/self/status). Unlike sampling, it misses no peak, however
// short.
func PeakRSS() (int64, error) { return statusBytes("VmHWM:") }

// ResetPeakRSS sets the peak resident set size back to the present one (Linux 4.0 and later), so
// that PeakRSS measures what follows and not the benchmark's own setup.
func ResetPeakRSS() error {
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return fmt.Errorf("resetting the peak resident set size: %w", err)
	}
	return nil
}

// statusBytes reads one size line of /proc/self/status, such as "VmRSS:  51234 kB", in bytes.
func statusBytes(key string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, fmt.Errorf("reading /proc/self/status: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		if v, ok := bytes.CutPrefix(line, []byte(key)); ok {
			f := bytes.Fields(v)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(string(f[0]), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %s %q: %w", key, v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s line in /proc/self/status", key)
}

// Peaks samples RSS and the goroutine count until stopped, keeping the highest of each.
type Peaks struct {
	mu         sync.Mutex
	RSS        int64
	Goroutines int
	stop       chan struct{}
	done       chan struct{}
}

// WatchPeaks starts sampling every interval.
func WatchPeaks(interval time.Duration) *Peaks {
	p := &Peaks{stop: make(chan struct{}), done: make(chan struct{})}
	p.sample()
	go func() {
		defer close(p.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				p.sample()
				return
			case <-t.C:
				p.sample()
			}
		}
	}()
	return p
}

func (p *Peaks) sample() {
	rss, _ := RSS()
	g := runtime.NumGoroutine()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.RSS = max(p.RSS, rss)
	p.Goroutines = max(p.Goroutines, g)
}

// Stop ends sampling and returns the peaks.
func (p *Peaks) Stop() (rss int64, goroutines int) {
	close(p.stop)
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.RSS, p.Goroutines
}

// MiB is n bytes in mebibytes.
func MiB(n int64) float64 { return float64(n) / (1 << 20) }
