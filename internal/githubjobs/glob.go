package githubjobs

import (
	"fmt"
	"path"
	"strings"
)

// matchGlob matches a slash-separated path against a glob whose segments follow path.Match, with
// one addition: a ** segment matches any number of segments, none included ("**/*.go" matches
// "a.go" and "cmd/x/a.go").
func matchGlob(glob, name string) bool {
	return matchSegments(strings.Split(glob, "/"), strings.Split(name, "/"))
}

func matchSegments(glob, name []string) bool {
	for len(glob) > 0 {
		if glob[0] == "**" {
			for i := 0; i <= len(name); i++ {
				if matchSegments(glob[1:], name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(glob[0], name[0]); !ok {
			return false
		}
		glob, name = glob[1:], name[1:]
	}
	return len(name) == 0
}

// checkGlob rejects a glob path.Match cannot read, naming it.
func checkGlob(glob string) error {
	if glob == "" {
		return fmt.Errorf("a glob is empty")
	}
	for _, seg := range strings.Split(glob, "/") {
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("glob %q: %w", glob, err)
		}
	}
	return nil
}
