package tools

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/keelrun/keel/internal/tools/sandbox"
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
		out = append(out, stripCredentials(kv))
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

// urlUserinfo matches the user (and password) part of a URL: "https://user:secret@host".
var urlUserinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s,|]*@`)

// stripCredentials removes the credentials embedded in URLs in a variable's value
// (GOPROXY=https://user:secret@proxy becomes GOPROXY=https://proxy): a passed variable must not
// carry a secret in its value any more than in its name.
func stripCredentials(kv string) string {
	return urlUserinfo.ReplaceAllString(kv, "$1")
}

// sandboxEnv is the environment of a sandboxed command: the clean environment, with the paths
// that point into the worker's home or temporary folders replaced by ones that exist inside.
// With a cache, the Go build and module caches live under it and stay warm between commands.
func sandboxEnv(cache bool, goBin string) []string {
	set := map[string]string{"HOME": "/tmp", "TMPDIR": "/tmp", "GOCACHE": "/tmp/go-build", "GOPATH": "/tmp/go"}
	if cache {
		set["GOCACHE"] = sandbox.CachePath + "/go-build"
		set["GOPATH"] = sandbox.CachePath + "/gopath"
		set["GOMODCACHE"] = sandbox.CachePath + "/mod"
	}
	drop := map[string]bool{"GOTMPDIR": true, "GOENV": true, "GOMODCACHE": true}
	var out []string
	for _, kv := range commandEnv() {
		name, val, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; ok || drop[name] {
			continue
		}
		if name == "PATH" && goBin != "" && !slices.Contains(filepath.SplitList(val), goBin) {
			kv += string(filepath.ListSeparator) + goBin
		}
		out = append(out, kv)
	}
	for name, val := range set {
		out = append(out, name+"="+val)
	}
	sort.Strings(out)
	return out
}
