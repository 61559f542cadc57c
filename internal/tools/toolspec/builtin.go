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
	Delegate   = "delegate"
)

// Tool is one built-in tool: the one place its name, description, arguments and advice are
// written. The JSON Schema the model sees is generated from Args (schema.go), package tools decodes
// the call's arguments into the same struct, and the feedback and Web UI summaries read the rest.
type Tool struct {
	Name        string
	Description string
	// Args is a zero value of the tool's argument struct. Its fields' json tags name the
	// arguments (omitempty: optional), the jsonschema tag describes one, and the min and example
	// tags add minLength (strings) or minimum (integers) and an example (see schemaFor).
	Args any
	// Writes says the tool may change the work directory; approval policy "writes" gates it, and a
	// tool that does not write is safe to retry after an interrupted call.
	Writes bool
	// Summary names the arguments whose value names a call in the Web UI ("write_file calc.go"),
	// tried in order; the first non-empty one wins.
	Summary []string
	// Interrupted tells the model what to look at before it tries again when a call's outcome is
	// unknown (the worker stopped mid-call), given the call's argument text. It is only asked of
	// tools that write; nil gives the generic advice.
	Interrupted func(args string) string
}

// File is the argument of the tools that work on one file.
type File struct {
	Path string `json:"path" jsonschema:"file path relative to the work directory" example:"calc.go"`
}

// ReadFileArgs are read_file's arguments.
type ReadFileArgs struct {
	File
}

// WriteFileArgs are write_file's arguments.
type WriteFileArgs struct {
	File
	Content string `json:"content" jsonschema:"the complete new content of the file"`
}

// EditFileArgs are edit_file's arguments.
type EditFileArgs struct {
	File
	Old string `json:"old" jsonschema:"the exact text to replace; it must occur exactly once"`
	New string `json:"new" jsonschema:"the text to put in its place"`
}

// ListDirArgs are list_dir's arguments.
type ListDirArgs struct {
	Path string `json:"path" jsonschema:"directory path relative to the work directory; \".\" is the work directory itself" example:"."`
}

// SearchArgs are search's arguments.
type SearchArgs struct {
	Pattern string `json:"pattern" min:"1" jsonschema:"the exact text to look for" example:"TODO"`
	Path    string `json:"path,omitempty" jsonschema:"file or directory to search, relative to the work directory; the whole work directory when omitted"`
}

// RunCommandArgs are run_command's arguments.
type RunCommandArgs struct {
	Command        string `json:"command" min:"1" jsonschema:"the program and its arguments, such as \"go test ./...\"" example:"go test ./..."`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" min:"1" jsonschema:"stop the command after this many seconds; the configured limit applies when it is smaller"`
}

// DelegateArgs are delegate's arguments: one sub-agent's task and what it may use. The workflow
// runs the call (it starts a child session), so no tool code decodes them outside it.
type DelegateArgs struct {
	Task      string `json:"task" min:"1" jsonschema:"the sub-agent's whole task, with everything it needs to know: it does not see this conversation" example:"Make the tests in ./calc pass"`
	Tools     string `json:"tools,omitempty" jsonschema:"the names of the tools the sub-agent may use, from your own, separated by commas; all of yours when omitted" example:"read_file,run_command"`
	Model     string `json:"model,omitempty" jsonschema:"the model the sub-agent runs on; yours when omitted"`
	MaxTurns  int    `json:"max_turns,omitempty" min:"1" jsonschema:"the most turns the sub-agent may take; it never gets more than you have left"`
	MaxTokens int    `json:"max_tokens,omitempty" min:"1" jsonschema:"the most tokens the sub-agent may use; it never gets more than you have left"`
}

// tools are the built-in tools, in the order the model is offered them. Changing a row's
// description or arguments changes the tool set's digest: TestReleasedSets then asks for the new
// set to be written next to the old ones, which running sessions keep.
var tools = []Tool{
	{
		Name:        ReadFile,
		Description: "Read a text file in the work directory and return its exact content. Paths are relative to the work directory.",
		Args:        ReadFileArgs{},
		Summary:     []string{"path"},
	},
	{
		Name:        WriteFile,
		Description: "Create or replace a file in the work directory with the given content. Missing parent directories are created. The write is all or nothing.",
		Args:        WriteFileArgs{},
		Writes:      true,
		Summary:     []string{"path"},
		Interrupted: fileInterrupted,
	},
	{
		Name:        EditFile,
		Description: "Replace one exact piece of text in a file. The text in old must appear exactly once in the file; copy it from read_file output, including spaces and indentation.",
		Args:        EditFileArgs{},
		Writes:      true,
		Summary:     []string{"path"},
		Interrupted: fileInterrupted,
	},
	{
		Name:        ListDir,
		Description: "List the entries of a directory in the work directory, sorted by name; directories end with a slash.",
		Args:        ListDirArgs{},
		Summary:     []string{"path"},
	},
	{
		Name:        Search,
		Description: "Search text files for a plain substring (not a regular expression) and return matching lines as path:line: text, with a capped number of results.",
		Args:        SearchArgs{},
		Summary:     []string{"path", "pattern"},
	},
	{
		Name: RunCommand,
		Description: "Run one program in the work directory without a shell and return its exit status and combined output. " +
			"Words are split on spaces; quote a word with single or double quotes. Pipes and redirections are not interpreted. " +
			"Only allowed programs may run, and a command that runs too long is stopped.",
		Args:    RunCommandArgs{},
		Writes:  true,
		Summary: []string{"command"},
		Interrupted: func(string) string {
			return "The command may have run in part and changed files; list the directory or read the files it works on before running it again."
		},
	},
	{
		// Last, so a session that may not delegate is offered the set before it, a released one.
		Name: Delegate,
		Description: "Start a sub-agent: a separate session that works on the given task with a subset of your tools in the same " +
			"work directory and returns its final answer as this call's result. Several delegate calls in one reply run at " +
			"the same time; give them parts of the work that do not touch the same files. Its spending counts against your limits.",
		Args:    DelegateArgs{},
		Summary: []string{"task"},
	},
}

// Tools returns the rows of the built-in tools, in their order.
func Tools() []Tool { return slices.Clone(tools) }

// toolNamed finds a built-in tool's row.
func toolNamed(name string) (Tool, bool) {
	i := slices.IndexFunc(tools, func(t Tool) bool { return t.Name == name })
	if i < 0 {
		return Tool{}, false
	}
	return tools[i], true
}

// otherSummary are the arguments that name a call to a tool that is not built in (an MCP
// server's), whose arguments Keel does not know.
var otherSummary = []string{"path", "command", "pattern"}

// SummaryArgs names the arguments whose value names a call to tool in the Web UI, in order.
func SummaryArgs(tool string) []string {
	if t, ok := toolNamed(tool); ok {
		return slices.Clone(t.Summary)
	}
	return slices.Clone(otherSummary)
}

// Builtin returns this build's built-in tools, in a fixed order, with their JSON Schemas: the tools
// a new session is offered. A session already running keeps the set it was started with, resolved
// by digest from the released sets (released.go), so a change here reaches new sessions only.
func Builtin() []contract.ToolSpec {
	if override != nil {
		return cloneSpecs(override)
	}
	return builtinSpecs()
}

// specs are the rows written out as the model sees them, generated once.
var specs = specsOf(tools)

// builtinSpecs returns a copy of specs. The schemas are generated in a fixed key order
// (schemaFor), so the bytes sent to the model never change between builds or replays.
func builtinSpecs() []contract.ToolSpec { return cloneSpecs(specs) }

// specsOf writes tool rows out as tool specs.
func specsOf(rows []Tool) []contract.ToolSpec {
	out := make([]contract.ToolSpec, 0, len(rows))
	for _, t := range rows {
		out = append(out, contract.ToolSpec{Name: t.Name, Description: t.Description, Parameters: schemaFor(t.Args), Writes: t.Writes})
	}
	return out
}

// OnlyReads says whether spec is a built-in tool that only reads the work directory (not the
// delegate tool, which starts a session): running such a call again changes nothing, so it may
// run where a lost worker means it runs twice.
func OnlyReads(spec contract.ToolSpec) bool {
	return spec.Server == "" && !spec.Writes && spec.Name != Delegate
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
// set, it returns that set's digest and the tools after it; otherwise "" and the whole list. The
// longest released set that fits wins, so a release that added a tool keeps its own set whole
// instead of sending it as the older, shorter set and the added tool.
func Split(specs []contract.ToolSpec) (builtin string, rest []contract.ToolSpec) {
	if n := len(Builtin()); len(specs) >= n && Digest(specs[:n]) == builtinDigest() {
		return builtinDigest(), specs[n:]
	}
	for _, n := range slices.Backward(releasedLens) {
		if len(specs) < n {
			continue
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
