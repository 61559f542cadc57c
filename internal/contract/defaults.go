package contract

import "time"

// Defaults of settings whose zero value means "the default". The configuration's key table, the
// tools, the gateway's backoff and the workflows' activity options all read them from here, since
// contract is the one package all of them import; a default written once cannot drift.
const (
	// DefaultRetryBase and DefaultRetryCap bound the gateway's equal-jitter backoff (RetryConfig).
	DefaultRetryBase = 400 * time.Millisecond
	DefaultRetryCap  = 8 * time.Second
	// DefaultCommandTimeout bounds one run_command call (ToolPolicy.CommandTimeout).
	DefaultCommandTimeout = 60 * time.Second
	// DefaultOutputCap is how many bytes of a command's output a tool result keeps.
	DefaultOutputCap = 16 << 10
	// DefaultWorkspacesPush: a session that ran in a workspace made from git leaves its changes
	// as a branch on the origin unless the worker is told not to (workspaces.push).
	DefaultWorkspacesPush = true
	// DefaultWorkspacesKeepFor is how long `starter prune` keeps a workspace no tool used.
	DefaultWorkspacesKeepFor = 336 * time.Hour
	// DefaultWorkspacesCacheMB bounds the per-repository git caches together, in MiB.
	DefaultWorkspacesCacheMB = 10240
	// DefaultWorkspacesRecordMB bounds the files of one recorded workspace state, in MiB: well
	// above a source tree, below what a store should take per tool call.
	DefaultWorkspacesRecordMB = 1024
	// DefaultGitHubURL is where a repository written owner/name is fetched from and pushed to
	// unless the worker names another GitHub (workspaces.github_url).
	DefaultGitHubURL = "https://github.com"
)

// WorkerTools are a worker's own tool settings, the same for every session it serves: the
// configuration's worker keys fill them (config.Config.WorkerTools), internal/app hands them to
// the tools once, and a tool reads its field there. A new one is a field here, with its default
// above, its key's row in internal/config and its use in the tool. A setting each session chooses
// belongs in ToolLimits instead.
type WorkerTools struct {
	// OutputCap is how many bytes of a command's output a result keeps; zero is DefaultOutputCap.
	OutputCap int
}

// ApprovalMode says which tool calls wait for a person's approval (ToolPolicy.Approval).
type ApprovalMode string

// The approval modes; the zero value is ApprovalNever.
const (
	ApprovalNever  ApprovalMode = "never"
	ApprovalWrites ApprovalMode = "writes"
	ApprovalAlways ApprovalMode = "always"
)

// ApprovalModes lists the approval modes, as the configuration offers them.
var ApprovalModes = []string{string(ApprovalNever), string(ApprovalWrites), string(ApprovalAlways)}

// ToolsUnknownErrorType is the ApplicationError type of a turn whose tools do not join (two tools
// with one name): no retry of the turn can fix it.
const ToolsUnknownErrorType = "ToolsUnknown"
