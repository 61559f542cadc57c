package fakegw

import (
	"context"
	"errors"
	"testing"
	"time"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	anthoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	"github.com/keelrun/keel/internal/devkit/demo"
)

// These tests run the real provider SDKs against the fake, the way the gateway does, to prove
// the wire formats are the ones the SDKs parse.

func sdkContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// openAIClient is configured as the gateway configures it: base URL .../v1, no SDK retries.
func openAIClient(baseURL, mode string) openai.Client {
	return openai.NewClient(oaoption.WithBaseURL(baseURL+"/v1"), oaoption.WithAPIKey("test"),
		oaoption.WithMaxRetries(0), oaoption.WithHeader(ModeHeader, mode))
}

func anthropicClient(baseURL, mode string) anth.Client {
	return anth.NewClient(anthoption.WithBaseURL(baseURL), anthoption.WithAPIKey("test"),
		anthoption.WithMaxRetries(0), anthoption.WithHeader(ModeHeader, mode))
}

// openAITurn streams one completion and returns the accumulated message.
func openAITurn(ctx context.Context, c openai.Client, msgs []openai.ChatCompletionMessageParamUnion) (openai.ChatCompletionAccumulator, error) {
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "gw-model", Messages: msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer stream.Close()
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		if !acc.AddChunk(stream.Current()) {
			return acc, errors.New("accumulator rejected a chunk")
		}
	}
	return acc, stream.Err()
}

func anthropicTurn(ctx context.Context, c anth.Client, msgs []anth.MessageParam) (anth.Message, error) {
	stream := c.Messages.NewStreaming(ctx, anth.MessageNewParams{Model: anth.Model("gw-model"), MaxTokens: 1024, Messages: msgs})
	defer stream.Close()
	msg := anth.Message{}
	for stream.Next() {
		if err := msg.Accumulate(stream.Current()); err != nil {
			return msg, err
		}
	}
	return msg, stream.Err()
}

func TestOpenAISDKWalksTheDemo(t *testing.T) {
	gw := New(Options{})
	srv := gw.testServer(t)
	ctx := sdkContext(t)
	client := openAIClient(srv.URL, ModeToolError)
	ws := newWorkspace(t)
	ws.failWrites = 1
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Make the tests pass.")}
	var calls []call
	for turn := 0; turn < 10; turn++ {
		acc, err := openAITurn(ctx, client, msgs)
		if err != nil {
			t.Fatalf("turn %d: %v", turn+1, err)
		}
		if acc.Usage.PromptTokens < 1 || acc.Usage.CompletionTokens < 1 {
			t.Errorf("turn %d: usage %+v", turn+1, acc.Usage)
		}
		m := acc.Choices[0].Message
		msgs = append(msgs, m.ToParam())
		if len(m.ToolCalls) == 0 {
			if m.Content != answerFixed || acc.Choices[0].FinishReason != "stop" {
				t.Fatalf("final %q (%s)", m.Content, acc.Choices[0].FinishReason)
			}
			break
		}
		for _, tc := range m.ToolCalls {
			c := call{ID: tc.ID, Name: tc.Function.Name, Args: tc.Function.Arguments}
			calls = append(calls, c)
			msgs = append(msgs, openai.ToolMessage(ws.run(c).Text, tc.ID))
		}
	}
	if got := names(calls); got != "list_dir,read_file,run_command,write_file,write_file,run_command" {
		t.Fatalf("calls %s", got)
	}
	if ws.files[demo.SourceFile] != demo.FixedSource {
		t.Errorf("calc.go not fixed")
	}
}

func TestAnthropicSDKWalksTheDemo(t *testing.T) {
	gw := New(Options{})
	srv := gw.testServer(t)
	ctx := sdkContext(t)
	client := anthropicClient(srv.URL, ModeToolError)
	ws := newWorkspace(t)
	ws.failWrites = 1
	msgs := []anth.MessageParam{anth.NewUserMessage(anth.NewTextBlock("Make the tests pass."))}
	var calls []call
	for turn := 0; turn < 10; turn++ {
		msg, err := anthropicTurn(ctx, client, msgs)
		if err != nil {
			t.Fatalf("turn %d: %v", turn+1, err)
		}
		if msg.Usage.InputTokens < 1 || msg.Usage.OutputTokens < 1 {
			t.Errorf("turn %d: usage %+v", turn+1, msg.Usage)
		}
		msgs = append(msgs, msg.ToParam())
		var results []anth.ContentBlockParamUnion
		for _, b := range msg.Content {
			if tu, ok := b.AsAny().(anth.ToolUseBlock); ok {
				c := call{ID: tu.ID, Name: tu.Name, Args: string(tu.Input)}
				calls = append(calls, c)
				res := ws.run(c)
				results = append(results, anth.NewToolResultBlock(tu.ID, res.Text, res.IsError))
			}
		}
		if len(results) == 0 {
			if msg.StopReason != anth.StopReasonEndTurn || msg.Content[0].Text != answerFixed {
				t.Fatalf("final %+v", msg)
			}
			break
		}
		if msg.StopReason != anth.StopReasonToolUse {
			t.Errorf("turn %d: stop reason %s", turn+1, msg.StopReason)
		}
		msgs = append(msgs, anth.NewUserMessage(results...))
	}
	if got := names(calls); got != "list_dir,read_file,run_command,write_file,write_file,run_command" {
		t.Fatalf("calls %s", got)
	}
	if ws.files[demo.SourceFile] != demo.FixedSource {
		t.Errorf("calc.go not fixed")
	}
}

func TestOpenAISDKSeesTheFaults(t *testing.T) {
	cases := []struct {
		mode   string
		status int
		code   string
		check  func(t *testing.T, acc openai.ChatCompletionAccumulator)
	}{
		{mode: ModeRateLimit, status: 429, code: "rate_limit_exceeded"},
		{mode: ModeBudget, status: 429, code: "insufficient_quota"},
		{mode: ModeOverloaded, status: 529, code: "overloaded"},
		{mode: ModeServerError, status: 503},
		{mode: ModeUnknown, status: 422},
		{mode: ModeNetwork},
		{mode: ModeTruncatedStart},
		{mode: ModeTruncated, check: func(t *testing.T, acc openai.ChatCompletionAccumulator) {
			if acc.Choices[0].Message.Content == "" {
				t.Errorf("no partial text before the cut")
			}
		}},
		{mode: ModeSchema},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			srv := New(Options{}).testServer(t)
			acc, err := openAITurn(sdkContext(t), openAIClient(srv.URL, tc.mode), []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Fix it.")})
			if err == nil {
				t.Fatalf("no error from mode %s", tc.mode)
			}
			t.Logf("%s: %v", tc.mode, err)
			var apiErr *openai.Error
			if tc.status != 0 {
				if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Code != tc.code {
					t.Fatalf("error %v, want status %d code %q", err, tc.status, tc.code)
				}
			} else if errors.As(err, &apiErr) {
				t.Fatalf("mode %s gave an API error %v, want a transport or parse error", tc.mode, err)
			}
			if tc.check != nil {
				tc.check(t, acc)
			}
		})
	}
	t.Run(ModeRefusal, func(t *testing.T) {
		srv := New(Options{}).testServer(t)
		acc, err := openAITurn(sdkContext(t), openAIClient(srv.URL, ModeRefusal), []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Fix it.")})
		if err != nil || acc.Choices[0].FinishReason != "content_filter" || acc.Choices[0].Message.Refusal != refusalText {
			t.Fatalf("refusal: %v %+v", err, acc.Choices)
		}
	})
}

func TestAnthropicSDKSeesTheFaults(t *testing.T) {
	cases := []struct {
		mode    string
		status  int
		errType string
	}{
		{mode: ModeRateLimit, status: 429, errType: "rate_limit_error"},
		{mode: ModeBudget, status: 400, errType: "billing_error"},
		{mode: ModeOverloaded, status: 529, errType: "overloaded_error"},
		{mode: ModeServerError, status: 503, errType: "api_error"},
		{mode: ModeUnknown, status: 422},
		{mode: ModeNetwork},
		{mode: ModeTruncatedStart},
		{mode: ModeTruncated},
		{mode: ModeSchema},
	}
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			srv := New(Options{}).testServer(t)
			_, err := anthropicTurn(sdkContext(t), anthropicClient(srv.URL, tc.mode), []anth.MessageParam{anth.NewUserMessage(anth.NewTextBlock("Fix it."))})
			if err == nil {
				t.Fatalf("no error from mode %s", tc.mode)
			}
			t.Logf("%s: %v", tc.mode, err)
			var apiErr *anth.Error
			if tc.status != 0 {
				if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || (tc.errType != "" && string(apiErr.Type()) != tc.errType) {
					t.Fatalf("error %v, want status %d type %q", err, tc.status, tc.errType)
				}
			} else if errors.As(err, &apiErr) {
				t.Fatalf("mode %s gave an API error %v, want a transport or parse error", tc.mode, err)
			}
		})
	}
	t.Run(ModeRefusal, func(t *testing.T) {
		srv := New(Options{}).testServer(t)
		msg, err := anthropicTurn(sdkContext(t), anthropicClient(srv.URL, ModeRefusal), []anth.MessageParam{anth.NewUserMessage(anth.NewTextBlock("Fix it."))})
		if err != nil || msg.StopReason != anth.StopReasonRefusal {
			t.Fatalf("refusal: %v %+v", err, msg)
		}
	})
}
