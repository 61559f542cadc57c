package gateway

import (
	"context"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicProvider streams Anthropic Messages.
type anthropicProvider struct {
	messages anthropic.MessageService
	cfg      Config
}

// newAnthropic builds the client from explicit options only; WithoutEnvironmentDefaults keeps
// ANTHROPIC_* variables and profile files out of it.
func newAnthropic(cfg Config) *anthropicProvider {
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithHTTPClient(cfg.HTTPClient),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	client := anthropic.NewClient(opts...)
	return &anthropicProvider{messages: client.Messages, cfg: cfg}
}

// Name names the provider.
func (p *anthropicProvider) Name() string { return ProviderAnthropic }

// Stream sends one Messages request and reads its event stream to message_stop.
func (p *anthropicProvider) Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	params, err := p.params(req)
	if err != nil {
		return Response{}, fmt.Errorf("building anthropic request: %w", err)
	}
	x := &exchange{}
	stream := p.messages.NewStreaming(ctx, params, option.WithMiddleware(x.middleware))
	var acc messageAccumulator
	err = readStream(ctx, ProviderAnthropic, x, stream, func(ev anthropic.MessageStreamEventUnion) (bool, error) {
		err := acc.add(ev, onDelta)
		return acc.stopped, err
	})
	if err != nil {
		return Response{}, err
	}
	return acc.finish()
}

// params builds the request body.
func (p *anthropicProvider) params(req Request) (anthropic.MessageNewParams, error) {
	turns, err := anthropicMessages(req.Messages, req.Strict)
	if err != nil {
		return anthropic.MessageNewParams{}, err
	}
	tools, err := anthropicTools(req.Tools)
	if err != nil {
		return anthropic.MessageNewParams{}, err
	}
	maxTokens := p.cfg.MaxTokens
	if maxTokens <= 0 {
		maxTokens = DefaultMaxTokens
	}
	if !p.cfg.NoPromptCache {
		markCachePrefix(tools, turns)
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(modelFor(req, p.cfg)),
		MaxTokens: maxTokens,
		Messages:  turns.params(),
		System:    turns.system,
	}
	if len(tools) > 0 {
		params.Tools = tools
	}
	return params, nil
}

// markCachePrefix puts cache_control breakpoints on the stable prefix of a request: the last tool
// (the tool list), the last system block, and the last block of the newest turn. The next request
// of the session starts with this one's whole transcript, so it reads all of it from the cache and
// pays full price only for what came since (Anthropic bills a cache read at a tenth of the input
// price). Three of the four breakpoints the API allows.
func markCachePrefix(tools []anthropic.ToolUnionParam, t anthropicTurns) {
	cc := anthropic.NewCacheControlEphemeralParam()
	if n := len(tools); n > 0 {
		if p := tools[n-1].GetCacheControl(); p != nil {
			*p = cc
		}
	}
	if n := len(t.system); n > 0 {
		t.system[n-1].CacheControl = cc
	}
	if n := len(t.turns); n > 0 {
		if blocks := t.turns[n-1].blocks; len(blocks) > 0 {
			if p := blocks[len(blocks)-1].GetCacheControl(); p != nil {
				*p = cc
			}
		}
	}
}
