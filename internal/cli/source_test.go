package cli

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/keelrun/keel/internal/contract"
)

// TestSourceOf: --repo with --commit or --ref and no --workdir names the session's source; with
// --workdir --repo stays a job key on the workers' directory; bad values are usage errors.
func TestSourceOf(t *testing.T) {
	sha := strings.Repeat("0a", 20)
	cases := []struct {
		name    string
		args    []string
		want    *contract.Source
		wantErr string
	}{
		{"commit", []string{"--repo", "acme/app", "--commit", sha}, &contract.Source{Repo: "acme/app", Commit: sha}, ""},
		{"ref", []string{"--repo", "https://git.example.com/app.git", "--ref", "main"}, &contract.Source{Repo: "https://git.example.com/app.git", Ref: "main"}, ""},
		{"a job key on a directory", []string{"--repo", "acme/app", "--commit", "abc123", "--workdir", "/srv/app"}, nil, ""},
		{"a job key alone", []string{"--repo", "acme/app"}, nil, ""},
		{"nothing", nil, nil, ""},
		{"short commit", []string{"--repo", "acme/app", "--commit", "abc123"}, nil, "not a full hex commit SHA"},
		{"ref without repo", []string{"--ref", "main"}, nil, "needs --repo"},
		{"ref with workdir", []string{"--repo", "acme/app", "--ref", "main", "--workdir", "/srv"}, nil, "give one of them"},
		{"local repo", []string{"--repo", "/srv/app.git", "--ref", "main"}, nil, "local paths and file:// are refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var job contract.JobKey
			var ref, workdir string
			cmd := &cobra.Command{}
			cmd.Flags().StringVar(&job.Repository, "repo", "", "")
			cmd.Flags().StringVar(&job.Commit, "commit", "", "")
			cmd.Flags().StringVar(&ref, "ref", "", "")
			cmd.Flags().StringVar(&workdir, "workdir", ".", "")
			if err := cmd.Flags().Parse(c.args); err != nil {
				t.Fatal(err)
			}
			got, err := sourceOf(cmd, job, ref)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}
