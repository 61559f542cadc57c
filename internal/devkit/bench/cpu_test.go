package bench

import (
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    ProcStat
		wantErr bool
	}{
		{"plain name", "4242 (temporal) S 100 4242 100 0 -1 4194560 1 0 0 0 150 25 0 0 20 0 12 0 1 2 3",
			ProcStat{Comm: "temporal", PPID: 100, CPU: 1750 * time.Millisecond}, false},
		{"name with spaces and parentheses", "7 (a (b) c) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 2 3",
			ProcStat{Comm: "a (b) c", PPID: 1, CPU: 70 * time.Millisecond}, false},
		{"no name", "7 R 1", ProcStat{}, true},
		{"too few fields", "7 (x) R 1 7", ProcStat{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProcStat([]byte(tt.line))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("ParseProcStat = %+v, want %+v", got, tt.want)
			}
		})
	}
}
