package tools

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/keelrun/keel/internal/tools/toolspec/feedbacktest"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		line    string
		want    []string
		refusal string
	}{
		{"go test ./...", []string{"go", "test", "./..."}, ""},
		{"  go   vet\t./x  ", []string{"go", "vet", "./x"}, ""},
		{`sh -c 'echo $HOME | wc'`, []string{"sh", "-c", "echo $HOME | wc"}, ""},
		{`echo "a \"b\" c" ''`, []string{"echo", `a "b" c`, ""}, ""},
		{`echo a\ b`, []string{"echo", "a b"}, ""},
		{`grep "|" file`, []string{"grep", "|", "file"}, ""},
		{`echo 'open`, nil, "opening quote (')"},
		{`echo "open`, nil, `opening quote (")`},
		{"   ", nil, "The command is empty"},
		{"go test && rm -rf x", nil, `shell operator "&&"`},
		{"ls > out.txt", nil, `shell operator ">"`},
		{"go vet 2>&1", nil, `shell operator "2>&1"`},
		{"grep a|b file", nil, `shell operator "|"`},
		{"echo x;", nil, `shell operator ";"`},
		{`echo "it's`, nil, `opening quote (")`},
		{"echo $HOME `date`", []string{"echo", "$HOME", "`date`"}, ""},
	}
	for _, tt := range tests {
		got, refusal := splitWords(tt.line)
		if tt.refusal != "" {
			if !strings.Contains(refusal, tt.refusal) {
				t.Errorf("splitWords(%q) refusal %q, want %q", tt.line, refusal, tt.refusal)
			}
			feedbacktest.Check(t, refusal)
			continue
		}
		if refusal != "" || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitWords(%q) = %q, %q; want %q", tt.line, got, refusal, tt.want)
		}
	}
}

func TestFilterEnv(t *testing.T) {
	got := filterEnv([]string{
		"PATH=/bin", "HOME=/root", "OPENAI_API_KEY=sk", "ANTHROPIC_AUTH_TOKEN=t", "AWS_SECRET_ACCESS_KEY=s",
		"GOFLAGS=-mod=mod", "LC_ALL=C", "GOPROXY_TOKEN=x", "SSH_AUTH_SOCK=/tmp/s", "RANDOM=1",
	})
	want := []string{"GOFLAGS=-mod=mod", "HOME=/root", "LC_ALL=C", "PATH=/bin"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("filterEnv = %q, want %q", got, want)
	}
	if got := filterEnv([]string{"HOME=/h"}); !reflect.DeepEqual(got, []string{"HOME=/h", "PATH=" + defaultPath}) {
		t.Fatalf("without PATH: %q", got)
	}
}

func TestCapture(t *testing.T) {
	tests := []struct {
		limit  int
		writes []string
		want   string
	}{
		{10, []string{"abc", "def"}, "abcdef"},
		{10, []string{"0123456789"}, "0123456789"},
		{4, []string{"ab", "cdef", "gh"}, "ab\n[cut: 4 bytes of output from the middle are not shown; 8 bytes in all]\ngh"},
	}
	for _, tt := range tests {
		c := newCapture(tt.limit)
		for _, w := range tt.writes {
			if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if got := c.String(); got != tt.want {
			t.Errorf("capture(%d, %q) = %q, want %q", tt.limit, tt.writes, got, tt.want)
		}
	}
}

// TestKillGroup starts a group directly and checks KillGroup leaves nothing of it alive.
func TestKillGroup(t *testing.T) {
	if err := KillGroup(0, time.Second); err == nil {
		t.Fatal("KillGroup(0) signalled the caller's own group")
	}
	if err := KillGroup(1, time.Second); err == nil {
		t.Fatal("KillGroup(1) was accepted")
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30")
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	if !groupAlive(cmd.Process.Pid) {
		t.Fatal("the new group is not seen alive")
	}
	if err := KillGroup(cmd.Process.Pid, DefaultGrace); err != nil {
		t.Fatal(err)
	}
	<-waited
	if groupAlive(cmd.Process.Pid) {
		t.Fatal("the group is still alive")
	}
	if err := KillGroup(cmd.Process.Pid, DefaultGrace); err != nil {
		t.Fatalf("stopping a group that is gone: %v", err)
	}
}
