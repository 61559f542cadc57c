package metrics_test

import (
	"context"
	"github.com/keelrun/keel/internal/metrics/record"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelrun/keel/internal/metrics"
)

// scrape fetches /metrics from addr over HTTP.
func scrape(t *testing.T, addr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+metrics.Path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(body)
}

// hasLine reports whether body holds line exactly.
func hasLine(body, line string) bool {
	for _, l := range strings.Split(body, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// serve starts a Metrics on a free loopback port and returns it with the bound address.
func serve(t *testing.T) (*metrics.Metrics, string) {
	t.Helper()
	m, err := metrics.New()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	return m, addr.String()
}

func TestKeelMetricsOnScrape(t *testing.T) {
	m, addr := serve(t)
	// Tags the SDK adds in activity code, so the series look like the real ones.
	h := m.Handler().WithTags(map[string]string{"task_queue": "keel"})

	record.ModelAttempt(h, "", record.AttemptOK)
	record.ModelAttempt(h, "throttle", record.AttemptRetry)
	record.ModelAttempt(h, "throttle", record.AttemptRetry)
	record.ModelRetry(h, "throttle", 300*time.Millisecond)
	record.ModelRetry(h, "throttle", 6*time.Second)
	record.ToolCall(h, "read_file", record.ToolOK)
	record.ToolCall(h, "read_file", record.ToolOK)
	record.ToolCall(h, "shell", record.ToolBlocked)
	record.ToolCall(h, "shell", record.ToolCancelled)
	record.Breaker(h, "github", true)
	record.Breaker(h, "shell", true)
	record.Breaker(h, "shell", false)
	record.LimitTripped(h, "tokens")
	record.EscalationRaised(h, "budget")
	record.EscalationRaised(h, "unknown")
	record.EscalationClosed(h)
	record.TokensUsed(h, 1200, 345)
	record.TokensUsed(h, 0, 5)

	body := scrape(t, addr)
	tests := []struct {
		name  string
		lines []string
	}{
		{"model attempts", []string{
			`# TYPE keel_model_attempts_total counter`,
			`keel_model_attempts_total{class="none",outcome="ok",task_queue="keel"} 1`,
			`keel_model_attempts_total{class="throttle",outcome="retry",task_queue="keel"} 2`,
		}},
		{"retries", []string{
			`# TYPE keel_model_retries_total counter`,
			`keel_model_retries_total{class="throttle",task_queue="keel"} 2`,
		}},
		{"retry waits", []string{
			`# TYPE keel_model_retry_wait_seconds histogram`,
			`keel_model_retry_wait_seconds_bucket{class="throttle",task_queue="keel",le="0.25"} 0`,
			`keel_model_retry_wait_seconds_bucket{class="throttle",task_queue="keel",le="0.5"} 1`,
			`keel_model_retry_wait_seconds_bucket{class="throttle",task_queue="keel",le="5"} 1`,
			`keel_model_retry_wait_seconds_bucket{class="throttle",task_queue="keel",le="10"} 2`,
			`keel_model_retry_wait_seconds_bucket{class="throttle",task_queue="keel",le="+Inf"} 2`,
			`keel_model_retry_wait_seconds_sum{class="throttle",task_queue="keel"} 6.3`,
			`keel_model_retry_wait_seconds_count{class="throttle",task_queue="keel"} 2`,
		}},
		{"tool calls", []string{
			`# TYPE keel_tool_calls_total counter`,
			`keel_tool_calls_total{outcome="ok",task_queue="keel",tool="read_file"} 2`,
			`keel_tool_calls_total{outcome="blocked",task_queue="keel",tool="shell"} 1`,
			`keel_tool_calls_total{outcome="cancelled",task_queue="keel",tool="shell"} 1`,
		}},
		{"breaker", []string{
			`# TYPE keel_breaker_open gauge`,
			`keel_breaker_open{key="github",task_queue="keel"} 1`,
			`keel_breaker_open{key="shell",task_queue="keel"} 0`,
		}},
		{"limits", []string{
			`# TYPE keel_limits_tripped_total counter`,
			`keel_limits_tripped_total{limit="tokens",task_queue="keel"} 1`,
		}},
		{"escalations", []string{
			`# TYPE keel_escalations_total counter`,
			`keel_escalations_total{reason="budget",task_queue="keel"} 1`,
			`keel_escalations_total{reason="unknown",task_queue="keel"} 1`,
			`# TYPE keel_escalations_open gauge`,
			`keel_escalations_open{task_queue="keel"} 1`,
		}},
		{"tokens", []string{
			`# TYPE keel_tokens_total counter`,
			`keel_tokens_total{kind="input",task_queue="keel"} 1200`,
			`keel_tokens_total{kind="output",task_queue="keel"} 350`,
		}},
		{"go runtime", []string{`# TYPE go_goroutines gauge`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, l := range tt.lines {
				require.True(t, hasLine(body, l), "missing line %q in:\n%s", l, keelLines(body))
			}
		})
	}
}

// keelLines keeps a scrape's keel_ lines, to make a failure readable.
func keelLines(body string) string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, "keel_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestNamesMatchScrape(t *testing.T) {
	m, addr := serve(t)
	h := m.Handler()
	record.ModelAttempt(h, "transport", record.AttemptSurfaced)
	record.ModelRetry(h, "transport", time.Second)
	record.ToolCall(h, "x", record.ToolError)
	record.Breaker(h, "x", false)
	record.LimitTripped(h, "turns")
	record.EscalationRaised(h, "spinning")
	record.TokensUsed(h, 1, 1)
	body := scrape(t, addr)

	names := []string{
		record.ModelAttempts, record.ModelRetries, record.ModelRetryWait, record.ToolCalls,
		record.BreakerOpen, record.LimitsTripped, record.Escalations, record.EscalationsOpen,
		record.Tokens,
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			require.Contains(t, body, "\n# TYPE "+name+" ", "the constant is not the name on /metrics")
		})
	}
}

func TestServeStopsWithContext(t *testing.T) {
	m, err := metrics.New()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	addr, err := m.Serve(ctx, "127.0.0.1:0")
	require.NoError(t, err)
	require.NotEmpty(t, scrape(t, addr.String()))
	cancel()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr.String() + metrics.Path)
		if err == nil {
			resp.Body.Close()
		}
		return err != nil
	}, 5*time.Second, 20*time.Millisecond, "the server still answers after its context ended")
}

func TestServeReportsBadAddress(t *testing.T) {
	m, err := metrics.New()
	require.NoError(t, err)
	_, err = m.Serve(context.Background(), "127.0.0.1:notaport")
	require.ErrorContains(t, err, "listening for metric scrapes")
}

func TestInvalidNameIsLoggedNotPanicked(t *testing.T) {
	m, addr := serve(t)
	// OpenTelemetry rejects this instrument name; the SDK handler's default reaction is to panic,
	// which would take down the worker recording it.
	require.NotPanics(t, func() {
		m.Handler().Counter("9 bad name!").Inc(1)
		m.Handler().Counter(record.EscalationsOpen + " !").Inc(1)
	})
	record.LimitTripped(m.Handler(), "turns")
	require.True(t, hasLine(scrape(t, addr), `keel_limits_tripped_total{limit="turns"} 1`))
}
