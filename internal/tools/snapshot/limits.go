package snapshot

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Settings named in the messages of a limit, so a person knows what to change.
const (
	SessionLimitSetting = "snapshots.session_mb"
	TotalLimitSetting   = "snapshots.max_mb"
)

// usageFile holds, in a session's folder, what its snapshots added to the store so far.
const usageFile = "usage"

// refuse says which limit keeping size more bytes would pass, with the session having added
// usage so far, or "" when neither.
func (s *Store) refuse(usage, size int64) string {
	if s.SessionMax > 0 && usage+size > s.SessionMax {
		return fmt.Sprintf("this session's snapshots reached their limit of %d MiB (%s)", s.SessionMax>>20, SessionLimitSetting)
	}
	if s.TotalMax > 0 {
		s.totalMu.Lock()
		defer s.totalMu.Unlock()
		if s.total < 0 || (s.total+size > s.TotalMax && time.Since(s.totalWhen) > time.Minute) {
			s.total, s.totalWhen = usageKept(s.Root), time.Now()
		}
		if s.total+size > s.TotalMax {
			return fmt.Sprintf("the snapshots of the state directory reached their limit of %d MiB (%s; `starter prune` frees space)", s.TotalMax>>20, TotalLimitSetting)
		}
	}
	return ""
}

// grow counts size more bytes in the store.
func (s *Store) grow(size int64) {
	s.totalMu.Lock()
	defer s.totalMu.Unlock()
	if s.total >= 0 {
		s.total += size
	}
}

// usage is what a session's snapshots added to the store so far.
func (s *Store) usage(session string) int64 {
	b, err := os.ReadFile(filepath.Join(s.dir(session), usageFile))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

func (s *Store) saveUsage(session string, n int64) {
	if err := os.MkdirAll(s.dir(session), 0o700); err == nil {
		_ = os.WriteFile(filepath.Join(s.dir(session), usageFile), []byte(strconv.FormatInt(n, 10)+"\n"), 0o600)
	}
}

// Usage is the disk space everything under root takes, in bytes (allocated blocks, as du counts).
func Usage(root string) int64 {
	var n int64
	_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		n += onDisk(d)
		return nil
	})
	return n
}

// usageKept is Usage without the contents being stored right now (which a limit check is about).
func usageKept(root string) int64 {
	n := Usage(root)
	names, _ := os.ReadDir(root)
	for _, d := range names {
		if strings.HasPrefix(d.Name(), "blob-") {
			n -= onDisk(d)
		}
	}
	return n
}

// onDisk is the space one walked file takes.
func onDisk(d fs.DirEntry) int64 {
	info, err := d.Info()
	if err != nil {
		return 0
	}
	return blocks(info)
}

// blocks is the allocated size of a file from its stat, in bytes.
func blocks(info fs.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return diskSize(info.Size())
}
