package config

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
		if d := editDistance(unknown, k); d < bestDist {
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

// editDistance is the Levenshtein distance between a and b, byte by byte (keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
