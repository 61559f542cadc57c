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
	opts := []option.RequestOption{option.WithMiddleware(x.middleware)}
	stream := p.messages.NewStreaming(ctx, params, opts...)
	defer func() { _ = stream.Close() }()
	if x.streaming() && x.mediaType != "text/event-stream" {
		return Response{}, &SchemaError{Provider: ProviderAnthropic, Detail: fmt.Sprintf("content type %q instead of an event stream", x.mediaType)}
	}
	var acc messageAccumulator
	for !acc.stopped && stream.Next() {
		if err := acc.add(stream.Current(), onDelta); err != nil {
			return Response{}, err
		}
	}
	if err := stream.Err(); err != nil {
		return Response{}, streamFailure(ctx, ProviderAnthropic, x, err)
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
