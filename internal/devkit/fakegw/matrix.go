package fakegw

import "github.com/keelrun/keel/internal/contract"

// Fault is one row of the gateway fault matrix: a mode the fake injects into a session's first
// model call, how the session ends, and how many attempts that call takes. The matrix is written
// here once; internal/e2e runs every row on every provider it applies to and the selftest runs
// each row on one of them in turn, so a new provider row is covered by both without an edit.
type Fault struct {
	Mode     string
	Status   string
	Attempts int
	// Only lists the providers the mode applies to; nil means every one (contract.Providers).
	Only []string
}

// Providers are the providers the fault applies to.
func (f Fault) Providers() []string {
	if f.Only != nil {
		return f.Only
	}
	return contract.Providers
}

// Matrix is the gateway fault matrix, one row per fault mode.
var Matrix = []Fault{
	{Mode: ModeRateLimit, Status: contract.StatusCompleted, Attempts: 2},
	{Mode: ModeNetwork, Status: contract.StatusCompleted, Attempts: 4},
	{Mode: ModeServerError, Status: contract.StatusCompleted, Attempts: 3},
	{Mode: ModeOverloaded, Status: contract.StatusCompleted, Attempts: 2, Only: []string{contract.ProviderAnthropic}},
	{Mode: ModeTruncatedStart, Status: contract.StatusCompleted, Attempts: 2},
	{Mode: ModeTruncated, Status: contract.StatusFailed, Attempts: 1},
	{Mode: ModeSchema, Status: contract.StatusFailed, Attempts: 2},
	{Mode: ModeRefusal, Status: contract.StatusFailed, Attempts: 1},
	{Mode: ModeBudget, Status: contract.StatusFailed, Attempts: 1},
	{Mode: ModeUnknown, Status: contract.StatusFailed, Attempts: 1},
	{Mode: ModeThrottleForever, Status: contract.StatusFailed, Attempts: 6},
}

// BaseURLFor is the fake's base URL as a gateway of the provider is configured with it.
func (s *Server) BaseURLFor(provider string) string {
	p, _ := contract.ProviderNamed(provider)
	return s.BaseURL() + p.APIPath
}
