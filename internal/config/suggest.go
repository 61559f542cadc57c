package config

import "github.com/keelrun/keel/internal/textfmt"

// suggestDistance is the largest edit distance at which an unknown key is taken for a typo of a
// known one: one or two letters missing, extra or swapped (limits.max_turn for limits.max_turns).
const suggestDistance = 2

// didYouMean names the known key an unknown one was likely meant to be, as " (did you mean
// KEY?)", or "" when none is close. Only keys in the same section (the part before the first dot)
// are suggested, so a stray key never points at an unrelated setting.
func didYouMean(unknown string) string {
	best, bestDist := "", suggestDistance+1
	for _, k := range Keys() {
		if section(k) != section(unknown) {
			continue
		}
		if d := textfmt.EditDistance(unknown, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return " (did you mean " + best + "?)"
}

// section is a key's first part: "limits" for limits.max_turns.
func section(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '.' {
			return key[:i]
		}
	}
	return key
}
