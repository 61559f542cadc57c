//go:build unix

package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// git status in a work tree looks into each submodule its index records (a gitlink: an entry of
// mode 160000), with the submodule's own configuration, so a core.fsmonitor there runs as whoever
// typed git. The index is the model's to write (git add), so the gitlinks are read from it before
// and after every command, and the git folder of each is protected like .git.

// Bounds on reading an index for its gitlinks: a bigger index, or more entries, and the rest are
// not looked at.
const (
	maxIndexSize = 64 << 20
	maxGitlinks  = 256
)

// gitlinkMode is the mode of a gitlink (a submodule's commit) in git's index.
const gitlinkMode = 0o160000

// Gitlinks lists the paths (slash-separated, relative to the work tree) that the index file at
// path records as submodules, at most maxGitlinks; nil when the index cannot be read or parsed.
// The file is opened without following a link or waiting, and read up to maxIndexSize.
func Gitlinks(path string) []string {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() || info.Size() > maxIndexSize {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIndexSize))
	if err != nil {
		return nil
	}
	// SHA-1 repositories hash in 20 bytes, SHA-256 ones in 32; the wrong length fails the
	// entries' own length checks.
	for _, hashLen := range []int{20, 32} {
		if links, err := parseGitlinks(data, hashLen); err == nil {
			return links
		}
	}
	return nil
}

var errIndex = errors.New("not an index git writes")

// parseGitlinks reads the entries of an index (versions 2 to 4) with hashes of hashLen bytes.
func parseGitlinks(data []byte, hashLen int) ([]string, error) {
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, errIndex
	}
	version := binary.BigEndian.Uint32(data[4:8])
	count := binary.BigEndian.Uint32(data[8:12])
	if version < 2 || version > 4 {
		return nil, errIndex
	}
	var links []string
	var prev []byte
	off := 12
	fixed := 40 + hashLen + 2
	for i := uint32(0); i < count; i++ {
		start := off
		if off+fixed > len(data) {
			return nil, errIndex
		}
		mode := binary.BigEndian.Uint32(data[off+24 : off+28])
		flags := binary.BigEndian.Uint16(data[off+40+hashLen : off+fixed])
		off += fixed
		if version >= 3 && flags&0x4000 != 0 {
			off += 2
		}
		if off > len(data) {
			return nil, errIndex
		}
		var name []byte
		if version == 4 {
			strip, n := binary.Uvarint(data[off:])
			if n <= 0 || strip > uint64(len(prev)) {
				return nil, errIndex
			}
			off += n
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, errIndex
			}
			name = append(append([]byte(nil), prev[:uint64(len(prev))-strip]...), data[off:off+end]...)
			off += end + 1
		} else {
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, errIndex
			}
			name = data[off : off+end]
			// Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
			off = start + (off-start+end+8)&^7
		}
		if n := int(flags & 0xfff); n < 0xfff && n != len(name) || len(name) == 0 {
			return nil, errIndex
		}
		prev = name
		if mode&0o170000 == gitlinkMode && len(links) < maxGitlinks {
			links = append(links, string(name))
		}
	}
	return links, nil
}
