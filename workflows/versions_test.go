package workflows

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"testing"
)

// TestEveryMarkerHasItsFixtures: each version marker (versions.go) names a recorded history from
// before it, which replays its old path, and one that took it, where such a history was recorded;
// the test checks that the first holds no record of the marker and the second does, so a renamed
// marker or a fixture recorded again fails here before it fails a running session.
func TestEveryMarkerHasItsFixtures(t *testing.T) {
	cases := []struct{ marker, before, since string }{
		{versionListTools, "v0-plain-session", "plain-session"},
		{versionSearchOnChange, "plain-session", "compaction-session"},
		{versionToolLedger, "plain-turn-1", "ledger-outcome-turn-1"},
		{versionTypedEnds, "v1-cancel-session", "cancel-session"},
		{versionCompaction, "plain-session", "compaction-session"},
		{versionSay, "plain-session", "say-session"},
		{versionKeepInterrupted, "v1-cancel-turn-1", "cancel-turn-1"},
		// Asked for at every session's start; no history that took it is recorded yet.
		{versionUsageWait, "plain-session", ""},
		// Reached only by a session with a goal, or a turn whose reply did not parse: no history
		// recorded on either path, so every one replays the old code by never reaching it.
		{versionGoal, "plain-session", ""},
		{versionStrictRetry, "plain-turn-1", ""},
		// Reached only by a turn whose reply calls delegate.
		{versionDelegate, "plain-turn-1", ""},
		// Asked when a session ends; no history recorded since.
		{versionReviewChanges, "plain-session", ""},
	}
	for _, c := range cases {
		t.Run(c.marker, func(t *testing.T) {
			if holdsMarker(t, c.before, c.marker) {
				t.Errorf("%s, the history from before %q, records it", c.before, c.marker)
			}
			if c.since != "" && !holdsMarker(t, c.since, c.marker) {
				t.Errorf("%s does not record %q", c.since, c.marker)
			}
		})
	}
}

// holdsMarker says whether a recorded history carries the change ID as a marker's payload.
func holdsMarker(t *testing.T, fixture, marker string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "histories", fixture+".json"))
	if err != nil {
		t.Fatal(err)
	}
	id := base64.StdEncoding.EncodeToString([]byte(`"` + marker + `"`))
	return bytes.Contains(data, bytes.TrimRight([]byte(id), "="))
}
