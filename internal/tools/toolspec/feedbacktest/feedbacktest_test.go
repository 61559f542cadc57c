package feedbacktest

import "testing"

func TestProblems(t *testing.T) {
	tests := []struct {
		name string
		text string
		bad  bool
	}{
		{"good", "The write failed and the file is unchanged; retry as is.", false},
		{"no change statement", "The write failed; retry as is.", true},
		{"no next action", "The write failed and the file is unchanged.", true},
		{"go error chain", "write calc.go: open calc.go: file exists; nothing changed, retry", true},
		{"absolute path", "Could not read \"/etc/passwd\"; nothing changed, retry.", true},
		{"errno", "errno 2; nothing changed, retry", true},
		{"bad format verb", "nothing changed %!s(int=1); retry", true},
		{"relative path is fine", "The file \"sub/calc.go\" is unchanged; read it again.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Problems(tt.text)
			if (len(got) > 0) != tt.bad {
				t.Fatalf("Problems(%q) = %v, want bad=%v", tt.text, got, tt.bad)
			}
		})
	}
}
