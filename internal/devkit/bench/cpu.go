package bench

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// ProcStat is what this package reads from one /proc/<pid>/stat line.
type ProcStat struct {
	Comm string
	PPID int
	// CPU is user plus system time.
	CPU time.Duration
}

// ParseProcStat reads a /proc/<pid>/stat line. The command name sits in parentheses and may hold
// spaces, so the fields are counted from the last ')'.
func ParseProcStat(line []byte) (ProcStat, error) {
	open, end := bytes.IndexByte(line, '('), bytes.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return ProcStat{}, fmt.Errorf("parsing a stat line %q: no command name", line)
	}
	f := bytes.Fields(line[end+1:])
	if len(f) < 13 {
		return ProcStat{}, fmt.Errorf("parsing a stat line %q: %d fields after the name", line, len(f))
	}
	var n [3]int64
	for i, idx := range []int{1, 11, 12} { // ppid, utime, stime
		v, err := strconv.ParseInt(string(f[idx]), 10, 64)
		if err != nil {
			return ProcStat{}, fmt.Errorf("parsing field %d of a stat line: %w", idx, err)
		}
		n[i] = v
	}
	return ProcStat{Comm: string(line[open+1 : end]), PPID: int(n[0]), CPU: time.Duration(n[1]+n[2]) * clockTick}, nil
}

// CPUTimes is the CPU time used so far by this process (the in-process worker and the
// benchmark) and by its child dev servers (processes whose name starts with temporal: the
// temporal CLI, or Keel's server build, temporal-server-<key>, which /proc shortens to
// temporal-server). Load on a shared machine
// stretches wall time but not CPU time, so CPU per turn compares runs made at different loads.
func CPUTimes() (self, servers time.Duration, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("reading this process's CPU time: %w", err)
	}
	st, err := ParseProcStat(b)
	if err != nil {
		return 0, 0, err
	}
	self = st.CPU
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	pid := os.Getpid()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended between the glob and the read
		}
		if st, err := ParseProcStat(b); err == nil && st.PPID == pid && strings.HasPrefix(st.Comm, "temporal") {
			servers += st.CPU
		}
	}
	return self, servers, nil
}
