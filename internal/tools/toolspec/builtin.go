package toolspec

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/keelrun/keel/internal/contract"
)

// Names of the built-in tools, as the model sees them.
const (
	ReadFile   = "read_file"
	WriteFile  = "write_file"
	EditFile   = "edit_file"
	ListDir    = "list_dir"
	Search     = "search"
	RunCommand = "run_command"
)

// Builtin returns this build's built-in tools, in a fixed order, with their JSON Schemas: the tools
// a new session is offered. A session already running keeps the set it was started with, resolved
// by digest from the released sets (released.go), so a change here reaches new sessions only.
func Builtin() []contract.ToolSpec {
	if override != nil {
		return cloneSpecs(override)
	}
	return builtinSpecs()
}

// builtinSpecs writes the built-in tools out. The schemas are text rather than generated so that
// the bytes sent to the model never change between builds or replays.
func builtinSpecs() []contract.ToolSpec {
	return []contract.ToolSpec{
		{
			Name:        ReadFile,
			Description: "Read a text file in the work directory and return its exact content. Paths are relative to the work directory.",
			Parameters: []byte(`{"type":"object","properties":{` +
				`"path":{"type":"string","description":"file path relative to the work directory","examples":["calc.go"]}` +
				`},"required":["path"],"additionalProperties":false}`),
		},
		{
			Name:        WriteFile,
			Description: "Create or replace a file in the work directory with the given content. Missing parent directories are created. The write is all or nothing.",
			Parameters: []byte(`{"type":"object","properties":{` +
				`"path":{"type":"string","description":"file path relative to the work directory","examples":["calc.go"]},` +
				`"content":{"type":"string","description":"the complete new content of the file"}` +
				`},"required":["path","content"],"additionalProperties":false}`),
			Writes: true,
		},
		{
			Name:        EditFile,
			Description: "Replace one exact piece of text in a file. The text in old must appear exactly once in the file; copy it from read_file output, including spaces and indentation.",
			Parameters: []byte(`{"type":"object","properties":{` +
				`"path":{"type":"string","description":"file path relative to the work directory","examples":["calc.go"]},` +
				`"old":{"type":"string","description":"the exact text to replace; it must occur exactly once"},` +
				`"new":{"type":"string","description":"the text to put in its place"}` +
				`},"required":["path","old","new"],"additionalProperties":false}`),
			Writes: true,
		},
		{
			Name:        ListDir,
			Description: "List the entries of a directory in the work directory, sorted by name; directories end with a slash.",
			Parameters: []byte(`{"type":"object","properties":{` +
				`"path":{"type":"string","description":"directory path relative to the work directory; \".\" is the work directory itself","examples":["."]}` +
				`},"required":["path"],"additionalProperties":false}`),
		},
		{
			Name:        Search,
			Description: "Search text files for a plain substring (not a regular expression) and return matching lines as path:line: text, with a capped number of results.",
			Parameters: []byte(`{"type":"object","properties":{` +
				`"pattern":{"type":"string","minLength":1,"description":"the exact text to look for","examples":["TODO"]},` +
				`"path":{"type":"string","description":"file or directory to search, relative to the work directory; the whole work directory when omitted"}` +
				`},"required":["pattern"],"additionalProperties":false}`),
		},
		{
			Name: RunCommand,
			Description: "Run one program in the work directory without a shell and return its exit status and combined output. " +
				"Words are split on spaces; quote a word with single or double quotes. Pipes and redirections are not interpreted. " +
				"Only allowed programs may run, and a command that runs too long is stopped.",
			Parameters: []byte(`{"type":"object","properties":{` +
				`"command":{"type":"string","minLength":1,"description":"the program and its arguments, such as \"go test ./...\"","examples":["go test ./..."]},` +
				`"timeout_seconds":{"type":"integer","minimum":1,"description":"stop the command after this many seconds; the configured limit applies when it is smaller"}` +
				`},"required":["command"],"additionalProperties":false}`),
			Writes: true,
		},
	}
}

// Lookup finds a tool by name. The list is searched in order, so the first of two tools with the
// same name wins, as it does for the model.
func Lookup(specs []contract.ToolSpec, name string) (contract.ToolSpec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return contract.ToolSpec{}, false
}

// Names returns the names of the given tools in their order, for messages that list them.
func Names(specs []contract.ToolSpec) []string {
	out := make([]string, 0, len(specs))
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// Digest names a tool list by the hash of its JSON. Half of SHA-256 is plenty: a digest is only
// ever compared with the few sets of released.go, and every byte is paid in every turn's history.
func Digest(specs []contract.ToolSpec) string {
	b, err := json.Marshal(specs)
	if err != nil {
		panic(fmt.Sprintf("encoding tool specs: %v", err)) // specs are built by code or checked on listing
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// thisBuild is the digest of builtinSpecs, taken once.
var thisBuild = Digest(builtinSpecs())

// override, when set, stands for this build's built-in tools, and overrideDigest is its digest
// (OverrideBuiltin).
var (
	override       []contract.ToolSpec
	overrideDigest string
)

// OverrideBuiltin makes specs this build's built-in tools until restore is called, as a release
// that changed their text would. It exists for tests that prove such a release leaves running
// sessions alone; it is not safe to call while workflows or activities run in other goroutines.
func OverrideBuiltin(specs []contract.ToolSpec) (restore func()) {
	prev, prevDigest := override, overrideDigest
	override, overrideDigest = cloneSpecs(specs), Digest(specs)
	return func() { override, overrideDigest = prev, prevDigest }
}

// builtinDigest is the digest of this build's built-in tools.
func builtinDigest() string {
	if override != nil {
		return overrideDigest
	}
	return thisBuild
}

// Split sends a tool list by digest: when it starts with this build's built-in tools or a released
// set, it returns that set's digest and the tools after it; otherwise "" and the whole list.
func Split(specs []contract.ToolSpec) (builtin string, rest []contract.ToolSpec) {
	if n := len(Builtin()); len(specs) >= n && Digest(specs[:n]) == builtinDigest() {
		return builtinDigest(), specs[n:]
	}
	for _, n := range releasedLens {
		if len(specs) < n {
			break
		}
		if d := Digest(specs[:n]); released[d] != nil {
			return d, specs[n:]
		}
	}
	return "", specs
}

// Join is the inverse of Split. A digest that names neither this build's built-in tools nor a
// released set means the turn was started by a build whose tools this one does not know: it is an
// error, never a guess.
func Join(builtin string, rest []contract.ToolSpec) ([]contract.ToolSpec, error) {
	if builtin == "" {
		return rest, nil
	}
	specs, ok := resolve(builtin)
	if !ok {
		return nil, fmt.Errorf("resolving the tool list: built-in tools %.12s are neither this build's (%.12s) nor a released set", builtin, builtinDigest())
	}
	return append(specs, slices.Clone(rest)...), nil
}
