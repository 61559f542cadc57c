// Package textfmt writes the numbers of Keel's text output one way everywhere: durations as
// "850ms", "4.2s", "42s", "5m 22s", "2h 05m", and counts with their noun in the right number
// ("1 turn", "3 turns"). jsonl output carries durations as integer milliseconds in fields named
// with an _ms suffix instead (README's jsonl table). Harmless is the one way text a model or a
// work directory wrote is made safe to print, everywhere Keel prints it.
package textfmt

import (
	"fmt"
	"strings"
	"time"
)

// Call names a tool call by its ID: "call 7" for an ID that does not say it is a call, the ID
// alone for one that does ("call_abc", as providers name them), never "call call_abc".
func Call(id string) string {
	if strings.HasPrefix(strings.ToLower(id), "call") {
		return id
	}
	return "call " + id
}

// Duration writes d for people: milliseconds below a second, tenths below ten seconds, whole
// seconds below a minute, then minutes and seconds, then hours and minutes.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d / time.Second)
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.1fs", float64(d.Round(100*time.Millisecond))/float64(time.Second))
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh %02dm", s/3600, s/60%60)
	}
}

// Count writes n with noun, adding an s unless n is 1 ("1 turn", "0 turns", "2 tool calls").
func Count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// EditDistance is the Levenshtein distance between a and b, byte by byte: how the "did you mean"
// of an unknown configuration key and of an unknown tool name picks the likely intended name.
func EditDistance(a, b string) int {
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

// Clip puts s on one line (runs of white space become one space) and shortens it to n bytes,
// ending in "..." when it was longer.
func Clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
