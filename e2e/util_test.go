package e2e

import "strings"

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
