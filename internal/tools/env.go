package tools

import (
	"os"
	"sort"
	"strings"
)

// passedEnv are the variables a command inherits from the worker, when set. Everything else,
// provider keys above all, stays behind.
var passedEnv = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "LANG": true, "LANGUAGE": true,
	"TZ": true, "TMPDIR": true,
	"GOPATH": true, "GOROOT": true, "GOCACHE": true, "GOMODCACHE": true, "GOFLAGS": true,
	"GOTOOLCHAIN": true, "GOPROXY": true, "GOSUMDB": true, "GONOSUMDB": true, "GOPRIVATE": true,
	"GONOPROXY": true, "GOINSECURE": true, "GOTMPDIR": true, "GOENV": true, "CGO_ENABLED": true,
}

// secretWords mark a variable as a credential even if its name is on the list above.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"}

// defaultPath is used when the worker has no PATH of its own.
const defaultPath = "/usr/local/bin:/usr/bin:/bin"

// commandEnv builds the clean environment of a command from the worker's, sorted by name.
func commandEnv() []string {
	return filterEnv(os.Environ())
}

func filterEnv(environ []string) []string {
	var out []string
	hasPath := false
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !passes(name) {
			continue
		}
		hasPath = hasPath || name == "PATH"
		out = append(out, kv)
	}
	if !hasPath {
		out = append(out, "PATH="+defaultPath)
	}
	sort.Strings(out)
	return out
}

func passes(name string) bool {
	upper := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return false
		}
	}
	return passedEnv[name] || strings.HasPrefix(name, "LC_")
}
