package snapshot

import (
	"fmt"
	"sort"
	"strings"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// Kind is how a change reads in a session's change list: contract.FileCreated where the path
// was absent or a folder before, FileDeleted where it is absent or a folder after, FileChanged
// otherwise.
func (c Change) Kind() string {
	switch {
	case noFile(c.Before):
		return contract.FileCreated
	case noFile(c.After):
		return contract.FileDeleted
	}
	return contract.FileChanged
}

func noFile(e *Entry) bool { return e == nil || e.Mode.IsDir() }

// SessionChanges are the files and links a session created, changed or deleted: its first
// snapshot (the work directory before its first change) against its last one kept. Note says
// what the list may lack (files a snapshot skipped, snapshots a size limit did not keep).
// ErrNone when the worker keeps no snapshot of the session.
func (s *Store) SessionChanges(session string) ([]Change, string, error) {
	turns, err := s.turns(session)
	if err != nil {
		return nil, "", err
	}
	if len(turns) == 0 {
		return nil, "", ErrNone
	}
	first, err := s.load(session, turns[0])
	if err != nil {
		return nil, "", err
	}
	if first.Missing != "" {
		return nil, "", &MissingError{Turn: first.Turn, Reason: first.Missing}
	}
	var notes []string
	last := first
	for i := len(turns) - 1; i > 0; i-- {
		m, err := s.load(session, turns[i])
		if err != nil || m.Missing != "" {
			if len(notes) == 0 {
				notes = append(notes, fmt.Sprintf("the snapshot after turn %d was not kept, so changes after the last one kept are not listed", turns[i]))
			}
			continue
		}
		last = m
		break
	}
	all, unknown := Diff(first, last)
	// A folder made or removed is no entry of a change list: the files in it are.
	var changes []Change
	for _, c := range all {
		if !noFile(c.Before) || !noFile(c.After) {
			changes = append(changes, c)
		}
	}
	if unknown > 0 {
		notes = append(notes, fmt.Sprintf("%s too big, too deep or too many for a snapshot could not be compared (up to %d MiB a file, %d files)",
			textfmt.Count(int64(unknown), "file"), MaxFileSize>>20, MaxEntries))
	}
	if last.Limit != "" {
		notes = append(notes, "some new contents were not kept: "+last.Limit)
	}
	return changes, strings.Join(notes, "; "), nil
}

// Diff is Changes plus what it leaves out, the paths either snapshot skipped: one b skipped
// that a never had is added as created (its content was not kept, but that it appeared is
// known), and unknown counts the others, whose change cannot be told.
func Diff(a, b Manifest) (changes []Change, unknown int) {
	changes = Changes(a, b)
	before, skippedA, skippedB := index(a), namesOf(a.Skipped), namesOf(b.Skipped)
	for p := range skippedB {
		if _, had := before[p]; !had && !skippedA[p] {
			changes = append(changes, Change{Path: p, After: &Entry{Path: p}})
			continue
		}
		unknown++
	}
	for p := range skippedA {
		if !skippedB[p] {
			unknown++
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, unknown + a.SkippedMore + b.SkippedMore
}

func namesOf(names []Name) map[Name]bool {
	out := make(map[Name]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}
