package snapshot

import (
	"fmt"
	"sort"
	"strings"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/textfmt"
)

// Change is one file or link that differs between two snapshots; Kind is contract.FileCreated,
// FileChanged or FileDeleted.
type Change struct {
	Path Name
	Kind string
}

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
	changes, unknown := Diff(first, last)
	if unknown > 0 {
		notes = append(notes, fmt.Sprintf("%s too big, too deep or too many for a snapshot could not be compared (up to %d MiB a file, %d files)",
			textfmt.Count(int64(unknown), "file"), MaxFileSize>>20, MaxEntries))
	}
	if last.Limit != "" {
		notes = append(notes, "some new contents were not kept: "+last.Limit)
	}
	return changes, strings.Join(notes, "; "), nil
}

// Diff lists what differs from a to b, by path: files and links (not folders) that b has and a
// has not (created), that both have with another content, target, kind or permission (changed),
// and that a has and b has not (deleted). unknown counts the paths either skipped, whose change
// cannot be told; a path b skipped that a never had is created.
func Diff(a, b Manifest) (changes []Change, unknown int) {
	before := entriesByPath(a)
	after := entriesByPath(b)
	skippedA := namesOf(a.Skipped)
	skippedB := namesOf(b.Skipped)
	for p, e := range after {
		if e.Mode.IsDir() {
			continue
		}
		old, ok := before[p]
		switch {
		case skippedA[p]:
			unknown++
		case !ok || old.Mode.IsDir():
			changes = append(changes, Change{p, contract.FileCreated})
		case old.Mode != e.Mode || old.Hash != e.Hash || old.Link != e.Link:
			changes = append(changes, Change{p, contract.FileChanged})
		}
	}
	for p, e := range before {
		if e.Mode.IsDir() {
			continue
		}
		if n, ok := after[p]; ok && !n.Mode.IsDir() {
			continue
		}
		if skippedB[p] {
			unknown++
			continue
		}
		changes = append(changes, Change{p, contract.FileDeleted})
	}
	for p := range skippedB {
		_, had := before[p]
		switch {
		case skippedA[p]:
			unknown++
		case !had:
			changes = append(changes, Change{p, contract.FileCreated})
		}
	}
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	return changes, unknown + a.SkippedMore + b.SkippedMore
}

func entriesByPath(m Manifest) map[Name]Entry {
	out := make(map[Name]Entry, len(m.Entries))
	for _, e := range m.Entries {
		out[e.Path] = e
	}
	return out
}

func namesOf(names []Name) map[Name]bool {
	out := make(map[Name]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}
