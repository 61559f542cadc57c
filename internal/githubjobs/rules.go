package githubjobs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/template"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/keelrun/keel/internal/contract"
)

// What a rule runs once for (Rule.ForEach).
const (
	// ForEachFile is one job per changed file that matches the rule's globs.
	ForEachFile = "file"
	// ForEachPullRequest is one job per pull request (and head commit).
	ForEachPullRequest = "pull_request"
)

// What happens to the running jobs of a pull request's earlier head commit when a new one is
// pushed (Rules.OldCommits).
const (
	// OldCommitsCancel sends them the cancel signal: their review is of code that is gone.
	OldCommitsCancel = "cancel"
	// OldCommitsFinish leaves them running; their comments still name their own commit.
	OldCommitsFinish = "finish"
)

// Whether a rule runs for a pull request from a fork (Rule.Forks).
const (
	// ForksSkip starts no job for a fork's pull request: its code and text come from someone who
	// may have no access to the repository, and a job runs with the bot's model credentials,
	// tools and escalation settings.
	ForksSkip = "skip"
	// ForksRun starts the rule's jobs for a fork's pull request too, each in a workspace of its
	// own keyed by the fork's commit (forkWorkdir), never the base repository's checkout.
	ForksRun = "run"
)

// Defaults of a rule file, written once here and in docs/github.md.
const (
	DefaultOldCommits    = OldCommitsCancel
	DefaultMaxRunning    = 10
	DefaultPromptVersion = "v1"
)

// Rules is a rule file: which jobs a pull request event starts and how many may run at once.
type Rules struct {
	// OldCommits is cancel or finish (DefaultOldCommits).
	OldCommits string `yaml:"old_commits"`
	// MaxRunning caps the jobs running at once in one repository (DefaultMaxRunning); jobs past the
	// cap are not started and the pull request gets a comment that says which and why. A negative
	// value means no cap.
	MaxRunning int    `yaml:"max_running"`
	Rules      []Rule `yaml:"rules"`
}

// Rule yields jobs from one pull request event.
type Rule struct {
	// Name identifies the rule in comments and, with PromptVersion, in the job's identity.
	Name string `yaml:"name"`
	// ForEach is file or pull_request.
	ForEach string `yaml:"for_each"`
	// Files are globs over the changed files' paths (* within a segment, ** across segments). For
	// for_each: file they pick the files that get a job (empty: every file); for pull_request the
	// job runs only if some changed file matches (empty: always).
	Files []string `yaml:"files"`
	// Exclude are globs of changed files the rule ignores.
	Exclude []string `yaml:"exclude"`
	// Prompt is the task, a Go text/template over Vars.
	Prompt string `yaml:"prompt"`
	// PromptVersion names the prompt; changing it makes every job new (DefaultPromptVersion).
	PromptVersion string `yaml:"prompt_version"`
	// Model is the model alias; empty takes the bot's default model.
	Model string `yaml:"model"`
	// Workdir is the work directory as the workers see it, a template over Vars; empty takes the
	// bot's default.
	Workdir string `yaml:"workdir"`
	// Forks is skip (the default) or run: whether a pull request whose head lives in another
	// repository (a fork) gets the rule's jobs. Like GitHub's pull_request_target, run hands
	// code and text from outside the repository to sessions with the bot's credentials.
	Forks  string `yaml:"forks"`
	Limits Limits `yaml:"limits"`

	prompt, workdir *template.Template
	// base is the directory every rendered workdir must stay in (workdirBase).
	base string
}

// Limits are a rule's hard limits; zero values take the bot's defaults.
type Limits struct {
	MaxTurns    int           `yaml:"max_turns"`
	MaxDuration time.Duration `yaml:"max_duration"`
	MaxTokens   int64         `yaml:"max_tokens"`
}

// Vars are what a rule's prompt and workdir templates can use. What a pull request's author
// writes (title, branch names, paths) is data, never template text: in a prompt each such value
// is a quoted, length-bounded string (forPrompt), and in a workdir a path-safe one (forPath).
type Vars struct {
	Repo   string // owner/name
	PR     int    // pull request number
	Title  string // pull request title
	Author string // login of the pull request's author
	Base   string // base branch
	Head   string // head branch
	Commit string // head commit SHA
	// Fork is owner/name of the head repository of a pull request from a fork; empty otherwise.
	Fork string
	// Path is the changed file of a for_each: file job; empty for pull_request jobs.
	Path string
	// Files are the changed files the rule matched.
	Files []string
}

// LoadRules reads and checks a rule file.
func LoadRules(path string) (Rules, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Rules{}, fmt.Errorf("reading the job rules: %w", err)
	}
	r, err := ParseRules(b)
	if err != nil {
		return Rules{}, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// ParseRules decodes a rule file, rejecting unknown keys, fills in the defaults and compiles the
// templates, so a mistake shows when the bot starts rather than on the first pull request.
func ParseRules(b []byte) (Rules, error) {
	var r Rules
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&r); err != nil {
		return Rules{}, fmt.Errorf("decoding the job rules: %w", err)
	}
	if err := r.normalize(); err != nil {
		return Rules{}, err
	}
	return r, nil
}

func (r *Rules) normalize() error {
	switch r.OldCommits {
	case "":
		r.OldCommits = DefaultOldCommits
	case OldCommitsCancel, OldCommitsFinish:
	default:
		return fmt.Errorf("old_commits is %q; want %s or %s", r.OldCommits, OldCommitsCancel, OldCommitsFinish)
	}
	if r.MaxRunning == 0 {
		r.MaxRunning = DefaultMaxRunning
	}
	if len(r.Rules) == 0 {
		return errors.New("the job rules have no rules: add at least one under rules")
	}
	seen := map[string]bool{}
	for i := range r.Rules {
		rule := &r.Rules[i]
		if err := rule.normalize(); err != nil {
			return fmt.Errorf("rules[%d] (%s): %w", i, rule.Name, err)
		}
		if seen[rule.Name] {
			return fmt.Errorf("rules[%d]: the name %q is used twice; each rule needs its own", i, rule.Name)
		}
		seen[rule.Name] = true
	}
	return nil
}

func (rule *Rule) normalize() error {
	if strings.TrimSpace(rule.Name) == "" || strings.ContainsAny(rule.Name, "@ \t\n") {
		return fmt.Errorf("name %q must be set and hold no spaces or @", rule.Name)
	}
	switch rule.ForEach {
	case ForEachFile, ForEachPullRequest:
	default:
		return fmt.Errorf("for_each is %q; want %s or %s", rule.ForEach, ForEachFile, ForEachPullRequest)
	}
	if strings.TrimSpace(rule.Prompt) == "" {
		return errors.New("prompt is empty")
	}
	if rule.PromptVersion == "" {
		rule.PromptVersion = DefaultPromptVersion
	}
	switch rule.Forks {
	case "":
		rule.Forks = ForksSkip
	case ForksSkip, ForksRun:
	default:
		return fmt.Errorf("forks is %q; want %s or %s", rule.Forks, ForksSkip, ForksRun)
	}
	for _, g := range append(append([]string{}, rule.Files...), rule.Exclude...) {
		if err := checkGlob(g); err != nil {
			return err
		}
	}
	if rule.Limits.MaxTurns < 0 || rule.Limits.MaxDuration < 0 || rule.Limits.MaxTokens < 0 {
		return errors.New("limits must not be negative")
	}
	var err error
	if rule.prompt, err = compile("prompt", rule.Prompt); err != nil {
		return err
	}
	if rule.Workdir != "" {
		if rule.workdir, err = compile("workdir", rule.Workdir); err != nil {
			return err
		}
		rule.base = workdirBase(rule.Workdir)
	}
	return nil
}

// compile parses a template and runs it once on sample values, so a misspelt field fails at load.
func compile(what, text string) (*template.Template, error) {
	t, err := template.New(what).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("%s template: %w", what, err)
	}
	if _, err := render(t, Vars{Repo: "o/r", PR: 1, Commit: "0", Path: "p", Files: []string{"p"}}); err != nil {
		return nil, fmt.Errorf("%s template: %w", what, err)
	}
	return t, nil
}

func render(t *template.Template, v Vars) (string, error) {
	var b strings.Builder
	if err := t.Execute(&b, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// matches says whether a changed file is one the rule looks at.
func (rule *Rule) matches(file string) bool {
	for _, g := range rule.Exclude {
		if matchGlob(g, file) {
			return false
		}
	}
	if len(rule.Files) == 0 {
		return true
	}
	for _, g := range rule.Files {
		if matchGlob(g, file) {
			return true
		}
	}
	return false
}

// promptVersion is the job key's prompt version: the rule's name and its version, so two rules
// never share a job.
func (rule *Rule) promptVersion() string { return rule.Name + "@" + rule.PromptVersion }

// limits lays the rule's limits over the bot's defaults.
func (rule *Rule) limits(base contract.Limits) contract.Limits {
	if rule.Limits.MaxTurns > 0 {
		base.MaxTurns = rule.Limits.MaxTurns
	}
	if rule.Limits.MaxDuration > 0 {
		setDuration(&base.MaxDuration, rule.Limits.MaxDuration)
	}
	if rule.Limits.MaxTokens > 0 {
		base.MaxTokens = rule.Limits.MaxTokens
	}
	return base
}

// setDuration sets a payload's duration field, whatever int64 duration type it has.
func setDuration[D ~int64](dst *D, d time.Duration) { *dst = D(d) }
