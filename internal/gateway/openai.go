package gateway

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// openaiProvider streams OpenAI-compatible chat completions.
type openaiProvider struct {
	chat openai.ChatCompletionService
	cfg  Config
}

// newOpenAI builds the service from explicit options only: constructing the service directly
// (not through openai.NewClient) keeps OPENAI_* environment variables out of it.
func newOpenAI(cfg Config) *openaiProvider {
	return &openaiProvider{chat: openai.NewChatCompletionService(openaiOptions(cfg)...), cfg: cfg}
}

// openaiOptions are the options of every OpenAI service Keel builds: the configured gateway, key
// and HTTP client, and no retries of the SDK's own.
func openaiOptions(cfg Config) []option.RequestOption {
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	return opts
}

// Name names the provider.
func (p *openaiProvider) Name() string { return ProviderOpenAI }

// Stream sends one chat completion request and reads its event stream to the end.
func (p *openaiProvider) Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	params, err := p.params(req)
	if err != nil {
		return Response{}, fmt.Errorf("building openai request: %w", err)
	}
	x := &exchange{watchDone: true}
	stream := p.chat.NewStreaming(ctx, params, option.WithMiddleware(x.middleware))
	var acc chatAccumulator
	err = readStream(ctx, ProviderOpenAI, x, stream, func(c openai.ChatCompletionChunk) (bool, error) {
		return false, acc.add(c, onDelta)
	})
	if err != nil {
		return Response{}, err
	}
	return acc.finish(x.sawDone())
}

// params builds the request body.
func (p *openaiProvider) params(req Request) (openai.ChatCompletionNewParams, error) {
	msgs, err := openaiMessages(req.Messages, req.Strict)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	tools, err := openaiTools(req.Tools)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	params := openai.ChatCompletionNewParams{
		Model:         modelFor(req, p.cfg),
		Messages:      msgs,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if len(tools) > 0 {
		params.Tools = tools
	}
	if p.cfg.MaxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(p.cfg.MaxTokens)
	}
	if req.CacheKey != "" && !p.cfg.NoPromptCache {
		// OpenAI caches prompt prefixes on its own; the key keeps one session's requests on the
		// same cache, so each reads the transcript the previous one sent.
		params.PromptCacheKey = openai.String(req.CacheKey)
	}
	return params, nil
}
