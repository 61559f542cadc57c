package cli

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/keelrun/keel/internal/contract"
	"github.com/keelrun/keel/internal/tools/snapshot"
	"github.com/keelrun/keel/internal/tools/toolspec"
)

// replayDiffs are the diffs of a transcript's writes and edits, by call ID, for a watcher that
// shows earlier turns: a write is compared with the file as it was when the call ran (as the
// snapshot of the turn before had it, or as an earlier write of the same turn left it), not with
// the file as it is now. A write whose earlier content is not known (no snapshot) has no diff.
// Turns are counted as fork counts them.
func replayDiffs(msgs []contract.Message, before func(turn int, path string) (string, bool)) map[string]string {
	out := map[string]string{}
	// Only calls that ran have a diff here: one still waiting for approval shows its diff
	// against the file as it is now, at its prompt.
	ran := map[string]bool{}
	for _, m := range msgs {
		if m.Role == contract.RoleTool {
			ran[m.ToolCallID] = true
		}
	}
	defer func() {
		for id := range out {
			if !ran[id] {
				delete(out, id)
			}
		}
	}()
	turn := 0
	var files map[string]string
	for _, m := range msgs {
		if m.Role != contract.RoleAssistant || m.Note != "" {
			continue
		}
		turn++
		files = map[string]string{}
		for _, c := range m.ToolCalls {
			switch c.Name {
			case "edit_file":
				var a toolspec.EditFileArgs
				if json.Unmarshal([]byte(c.Arguments), &a) != nil {
					continue
				}
				out[c.ID] = diffLines(splitLines(a.Old), splitLines(a.New))
				if text, ok := files[a.Path]; ok {
					files[a.Path] = strings.Replace(text, a.Old, a.New, 1)
				}
			case "write_file":
				var a toolspec.WriteFileArgs
				if json.Unmarshal([]byte(c.Arguments), &a) != nil {
					continue
				}
				old, ok := files[a.Path]
				if !ok {
					old, ok = before(turn, a.Path)
				}
				if ok {
					out[c.ID] = diffLines(splitLines(old), splitLines(a.Content))
				}
				files[a.Path] = a.Content
			}
		}
	}
	return out
}

// snapshotBefore reads a file as the session's snapshots had it before a turn: absent ("", true)
// when the snapshot has no such file, unknown (false) when there is no snapshot or the file is a
// link, too big or not text. Manifests are read once per turn; contents come from the store only.
func snapshotBefore(snaps *snapshot.Store, wid, workdir string) func(turn int, path string) (string, bool) {
	manifests := map[int]map[snapshot.Name]snapshot.Entry{}
	return func(turn int, path string) (string, bool) {
		entries, seen := manifests[turn]
		if !seen {
			if m, err := snaps.Find(wid, turn-1); err == nil && snapshot.Check(m) == nil {
				entries = map[snapshot.Name]snapshot.Entry{}
				for _, e := range m.Entries {
					entries[e.Path] = e
				}
			}
			manifests[turn] = entries
		}
		if entries == nil {
			return "", false
		}
		rel := filepath.Clean(path)
		if filepath.IsAbs(rel) {
			r, err := filepath.Rel(filepath.Clean(workdir), rel)
			if err != nil {
				return "", false
			}
			rel = r
		}
		if rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
			return "", false
		}
		e, ok := entries[snapshot.Name(rel)]
		if !ok {
			return "", true
		}
		if !e.Mode.IsRegular() {
			return "", false
		}
		b, err := snaps.Content(e, diffMaxBytes)
		if err != nil || bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
			return "", false
		}
		return string(b), true
	}
}

// showReplayDiffs gives a text printer the diffs of a transcript it is about to replay.
func showReplayDiffs(p printer, msgs []contract.Message, snaps *snapshot.Store, wid, workdir string) {
	if t, ok := p.(*textPrinter); ok {
		d := replayDiffs(msgs, snapshotBefore(snaps, wid, workdir))
		t.mu.Lock()
		t.replay = d
		t.mu.Unlock()
	}
}
