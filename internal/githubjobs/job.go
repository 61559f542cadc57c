package githubjobs

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/keelrun/keel/internal/contract"
)

// Job is one session a rule yields for a pull request's head commit.
type Job struct {
	// Rule is the name of the rule that yielded the job.
	Rule string
	// Key is the job's identity; its WorkflowID is the session's.
	Key    contract.JobKey
	GitHub contract.GitHubContext
	// Path is the changed file of a for_each: file job; empty for a pull_request job.
	Path    string
	Task    string
	Workdir string
	// Source is where the job's workspace comes from when its rule names no work directory.
	Source *contract.Source
	Model  string
	Limits contract.Limits
}

// Defaults are what a job takes where its rule says nothing.
type Defaults struct {
	Model   string
	Workdir string
	Limits  contract.Limits
}

// Jobs are the jobs the rules yield for one pull request at v.Commit with the given changed
// files, in rule order and, within a rule, in file order. A pull request from a fork (v.Fork)
// gets only the jobs of rules with forks: run. A job that cannot be rendered (its workdir would
// leave the rule's base) is left out, and the error names it; the others are returned.
func (r *Rules) Jobs(v Vars, files []string, def Defaults) ([]Job, error) {
	var jobs []Job
	var errs []error
	for i := range r.Rules {
		rule := &r.Rules[i]
		if v.Fork != "" && rule.Forks != ForksRun {
			continue
		}
		var matched []string
		for _, f := range files {
			if rule.matches(f) {
				matched = append(matched, f)
			}
		}
		if len(matched) == 0 && (rule.ForEach == ForEachFile || len(rule.Files) > 0) {
			continue
		}
		v.Files = matched
		paths := matched
		if rule.ForEach == ForEachPullRequest {
			paths = []string{""}
		}
		for _, f := range paths {
			j, err := rule.job(v, f, def)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			jobs = append(jobs, j)
		}
	}
	return jobs, errors.Join(errs...)
}

// job renders one job of the rule.
func (rule *Rule) job(v Vars, path string, def Defaults) (Job, error) {
	v.Path = path
	task, err := render(rule.prompt, v.forPrompt())
	if err != nil {
		return Job{}, fmt.Errorf("rendering the prompt of rule %s for %s: %w", rule.Name, orPR(path), err)
	}
	if strings.TrimSpace(task) == "" {
		return Job{}, fmt.Errorf("the prompt of rule %s rendered empty for %s", rule.Name, orPR(path))
	}
	model := rule.Model
	if model == "" {
		model = def.Model
	}
	if rule.workdir == nil && def.Workdir == "" {
		return rule.sourceJob(v, path, task, model, def.Limits)
	}
	workdir, base := def.Workdir, filepath.Clean(def.Workdir)
	if rule.workdir != nil {
		if workdir, err = render(rule.workdir, v.forPath()); err != nil {
			return Job{}, fmt.Errorf("rendering the workdir of rule %s for %s: %w", rule.Name, orPR(path), err)
		}
		base = rule.base
	}
	if v.Fork != "" {
		if workdir, base, err = forkWorkdir(rule, def, v.Commit); err != nil {
			return Job{}, err
		}
	}
	if workdir != "" && !within(base, workdir) {
		return Job{}, fmt.Errorf("the workdir of rule %s for %s renders to %q, outside %q: the job is not started", rule.Name, orPR(path), workdir, base)
	}
	return Job{
		Rule:    rule.Name,
		Key:     contract.JobKey{Repository: v.Repo, Commit: v.Commit, Path: path, PromptVersion: rule.promptVersion(), Model: model},
		GitHub:  contract.GitHubContext{Repo: v.Repo, PR: v.PR, Commit: v.Commit},
		Path:    path,
		Task:    task,
		Workdir: workdir,
		Model:   model,
		Limits:  rule.limits(def.Limits),
	}, nil
}

// sourceJob is a job of a rule that names no work directory: its session's workspace is the
// pull request's head commit, made by the worker from the head repository (the fork's, for a
// pull request from a fork), so each job reads its own commit and no two share a directory.
func (rule *Rule) sourceJob(v Vars, path, task, model string, limits contract.Limits) (Job, error) {
	src := contract.Source{Repo: v.Repo, Commit: v.Commit}
	if v.Fork != "" {
		src.Repo = v.Fork
	}
	if err := src.Check(); err != nil {
		return Job{}, fmt.Errorf("the workspace of rule %s for %s: %w", rule.Name, orPR(path), err)
	}
	return Job{
		Rule:   rule.Name,
		Key:    contract.JobKey{Repository: v.Repo, Commit: v.Commit, Path: path, PromptVersion: rule.promptVersion(), Model: model},
		GitHub: contract.GitHubContext{Repo: v.Repo, PR: v.PR, Commit: v.Commit},
		Path:   path,
		Task:   task,
		Source: &src,
		Model:  model,
		Limits: rule.limits(limits),
	}, nil
}

// orPR names what a job is for: its file, or the pull request.
func orPR(path string) string {
	if path == "" {
		return "the pull request"
	}
	return path
}

// Bounds of the author-written values a prompt quotes; past them a value is cut and marked.
const (
	maxQuotedName = 256  // title, branch names, repository of a fork
	maxQuotedPath = 1024 // a changed file's path
)

// forPrompt is v as a prompt shows it: the author-written values as quoted, length-bounded Go
// strings, so a title cannot pass for the rule's own instructions (a newline and what follows
// it stay inside the quotes).
func (v Vars) forPrompt() Vars {
	q := func(s string, n int) string {
		if s == "" {
			return ""
		}
		return strconv.Quote(clip(s, n))
	}
	v.Title, v.Base, v.Head, v.Fork = q(v.Title, maxQuotedName), q(v.Base, maxQuotedName), q(v.Head, maxQuotedName), q(v.Fork, maxQuotedName)
	v.Path = q(v.Path, maxQuotedPath)
	files := make([]string, len(v.Files))
	for i, f := range v.Files {
		files[i] = q(f, maxQuotedPath)
	}
	v.Files = files
	return v
}

// forPath is v as a workdir uses it: each value made path-safe (segment), so a branch named
// ../../tmp/x is one harmless directory name. Repo and Path keep their slashes between
// segments, each made safe.
func (v Vars) forPath() Vars {
	segs := func(s string) string {
		if s == "" {
			return ""
		}
		parts := strings.Split(s, "/")
		for i, p := range parts {
			parts[i] = segment(p)
		}
		return strings.Join(parts, "/")
	}
	v.Repo, v.Path = segs(v.Repo), segs(v.Path)
	v.Title, v.Author, v.Base, v.Head, v.Commit, v.Fork = segment(v.Title), segment(v.Author), segment(v.Base), segment(v.Head), segment(v.Commit), segment(v.Fork)
	files := make([]string, len(v.Files))
	for i, f := range v.Files {
		files[i] = segs(f)
	}
	v.Files = files
	return v
}

// maxSegment bounds one path segment a value becomes.
const maxSegment = 100

// segment makes s one path segment: letters, digits, '.', '-' and '_' kept, anything else '_',
// at most maxSegment bytes; "", "." and ".." become "_".
func segment(s string) string {
	b := []byte(s)
	if len(b) > maxSegment {
		b = b[:maxSegment]
	}
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	switch out := string(b); out {
	case "", ".", "..":
		return "_"
	default:
		return out
	}
}

// workdirBase is the directory a workdir template's renderings must stay in: its text before the
// first action, up to the last slash ("/srv/ws/{{.Path}}": /srv/ws); a workdir without an action
// is its own base; "" (a relative template with no fixed directory) means any relative path that
// does not climb out.
func workdirBase(text string) string {
	i := strings.Index(text, "{{")
	if i < 0 {
		return filepath.Clean(text)
	}
	j := strings.LastIndex(text[:i], "/")
	if j < 0 {
		return ""
	}
	return filepath.Clean(text[:j+1])
}

// within says whether dir, cleaned, is base or inside it.
func within(base, dir string) bool {
	dir = filepath.Clean(dir)
	if base == "" || base == "." {
		return filepath.IsLocal(dir)
	}
	rel, err := filepath.Rel(base, dir)
	return err == nil && filepath.IsLocal(rel)
}

// forkWorkdir is where a fork's job works: forks/<commit> in the rule's base (a workdir without
// a template: its parent directory), a workspace of its own for the fork's commit, never the
// base repository's checkout nor a path the fork's branch or file names could steer.
func forkWorkdir(rule *Rule, def Defaults, commit string) (workdir, base string, err error) {
	switch {
	case rule.workdir != nil && strings.Contains(rule.Workdir, "{{"):
		base = rule.base
	case rule.workdir != nil:
		base = filepath.Dir(rule.base)
	case def.Workdir != "":
		base = filepath.Dir(filepath.Clean(def.Workdir))
	default:
		return "", "", fmt.Errorf("rule %s runs for forks (forks: run) but has no workdir to put a fork's workspace beside: set its workdir", rule.Name)
	}
	return filepath.Join(base, "forks", segment(commit)), base, nil
}
