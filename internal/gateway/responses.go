package gateway

import (
	"context"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// responsesProvider streams OpenAI's Responses API. It is stateless: every request carries the
// whole transcript with store false, and the reasoning items of earlier replies go back as input
// items (their encrypted_content asked for with include), so no conversation lives on the
// provider's side and a session can move to another gateway or replay without losing anything.
type responsesProvider struct {
	svc responses.ResponseService
	cfg Config
}

// newResponses builds the service from explicit options only, as newOpenAI does.
func newResponses(cfg Config) *responsesProvider {
	return &responsesProvider{svc: responses.NewResponseService(openaiOptions(cfg)...), cfg: cfg}
}

// Name names the provider.
func (p *responsesProvider) Name() string { return ProviderOpenAIResponses }

// Stream sends one Responses request and reads its event stream to the event that ends the
// response (response.completed, response.incomplete or response.failed).
func (p *responsesProvider) Stream(ctx context.Context, req Request, onDelta func(string)) (Response, error) {
	params, err := p.params(req)
	if err != nil {
		return Response{}, fmt.Errorf("building openai-responses request: %w", err)
	}
	x := &exchange{}
	stream := p.svc.NewStreaming(ctx, params, option.WithMiddleware(x.middleware))
	var acc responseAccumulator
	err = readStream(ctx, ProviderOpenAIResponses, x, stream, func(ev responses.ResponseStreamEventUnion) (bool, error) {
		err := acc.add(ev, onDelta)
		return acc.ended, err
	})
	if err != nil {
		return Response{}, err
	}
	return acc.finish()
}

// params builds the request body.
func (p *responsesProvider) params(req Request) (responses.ResponseNewParams, error) {
	in, err := responsesInput(req.Messages, req.Strict)
	if err != nil {
		return responses.ResponseNewParams{}, err
	}
	tools, err := responsesTools(req.Tools)
	if err != nil {
		return responses.ResponseNewParams{}, err
	}
	params := responses.ResponseNewParams{
		Model: modelFor(req, p.cfg),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: in.items},
		// Nothing is kept on the provider's side; the transcript is Keel's.
		Store:   openai.Bool(false),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
	}
	if in.instructions != "" {
		params.Instructions = openai.String(in.instructions)
	}
	if len(tools) > 0 {
		params.Tools = tools
	}
	if p.cfg.MaxTokens > 0 {
		params.MaxOutputTokens = openai.Int(p.cfg.MaxTokens)
	}
	if req.CacheKey != "" && !p.cfg.NoPromptCache {
		params.PromptCacheKey = openai.String(req.CacheKey)
	}
	return params, nil
}
