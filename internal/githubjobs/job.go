package githubjobs

import (
	"fmt"
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
	Model   string
	Limits  contract.Limits
}

// Defaults are what a job takes where its rule says nothing.
type Defaults struct {
	Model   string
	Workdir string
	Limits  contract.Limits
}

// Jobs are the jobs the rules yield for one pull request at v.Commit with the given changed
// files, in rule order and, within a rule, in file order.
func (r *Rules) Jobs(v Vars, files []string, def Defaults) ([]Job, error) {
	var jobs []Job
	for i := range r.Rules {
		rule := &r.Rules[i]
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
		if rule.ForEach == ForEachPullRequest {
			j, err := rule.job(v, "", def)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, j)
			continue
		}
		for _, f := range matched {
			j, err := rule.job(v, f, def)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}

// job renders one job of the rule.
func (rule *Rule) job(v Vars, path string, def Defaults) (Job, error) {
	v.Path = path
	task, err := render(rule.prompt, v)
	if err != nil {
		return Job{}, fmt.Errorf("rendering the prompt of rule %s for %s: %w", rule.Name, orPR(path), err)
	}
	if strings.TrimSpace(task) == "" {
		return Job{}, fmt.Errorf("the prompt of rule %s rendered empty for %s", rule.Name, orPR(path))
	}
	workdir := def.Workdir
	if rule.workdir != nil {
		if workdir, err = render(rule.workdir, v); err != nil {
			return Job{}, fmt.Errorf("rendering the workdir of rule %s for %s: %w", rule.Name, orPR(path), err)
		}
	}
	model := rule.Model
	if model == "" {
		model = def.Model
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

// orPR names what a job is for: its file, or the pull request.
func orPR(path string) string {
	if path == "" {
		return "the pull request"
	}
	return path
}
