package fakegw

// faultKind says how a response goes wrong.
type faultKind int

// The zero faultKind is a normal reply.
const (
	// faultHTTP answers with an error status and a provider-shaped error body.
	faultHTTP faultKind = iota + 1
	// faultHangUp closes the connection before writing a byte.
	faultHangUp
	// faultTruncatedStart sends 200 and the SSE headers, then closes.
	faultTruncatedStart
	// faultTruncated streams some text, then closes without the terminator.
	faultTruncated
	// faultSchema sends 200 and an event whose data is not valid JSON.
	faultSchema
	// faultRefusal makes the model decline.
	faultRefusal
	// faultSlow streams the reply's text slowly.
	faultSlow
)

// fault is the injected failure of one response.
type fault struct {
	Kind faultKind
	// Name is recorded in Record.Fault.
	Name string
	// Status and RetryAfter (seconds, 0 for none) shape an HTTP error; Error picks its body.
	Status     int
	RetryAfter int
	Error      errorBody
}

// errorBody is one provider error in every wire format (the Responses API's is OpenAI's).
type errorBody struct {
	OpenAIType    string
	OpenAICode    string // empty sends null
	OpenAIMessage string
	// AnthropicStatus overrides Status on the Anthropic path when set.
	AnthropicStatus  int
	AnthropicType    string
	AnthropicMessage string
	// Raw, when set, is sent as the body on both paths instead of a provider shape.
	Raw string
}

var (
	rateLimitBody = errorBody{
		OpenAIType: "requests", OpenAICode: "rate_limit_exceeded",
		OpenAIMessage: "Rate limit reached for requests. Please try again in 1s.",
		AnthropicType: "rate_limit_error", AnthropicMessage: "Number of requests has exceeded your rate limit. Please try again later.",
	}
	serverErrorBody = errorBody{
		OpenAIType: "server_error", OpenAIMessage: "The server is overloaded or not ready yet.",
		AnthropicType: "api_error", AnthropicMessage: "Service temporarily unavailable.",
	}
	overloadedBody = errorBody{
		OpenAIType: "overloaded_error", OpenAICode: "overloaded", OpenAIMessage: "Overloaded",
		AnthropicType: "overloaded_error", AnthropicMessage: "Overloaded",
	}
	budgetBody = errorBody{
		OpenAIType: "insufficient_quota", OpenAICode: "insufficient_quota",
		OpenAIMessage:   "You exceeded your current quota, please check your plan and billing details.",
		AnthropicStatus: 400, AnthropicType: "billing_error",
		AnthropicMessage: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.",
	}
	unknownBody = errorBody{Raw: `{"detail":"upstream rejected the request","hint":["none"]}`}
)

// faultFor decides the fault of a request: gateway faults hit only the first model call of a
// conversation, on the attempts each mode names.
func faultFor(mode string, attempt int, first bool) fault {
	if !first {
		return fault{}
	}
	switch mode {
	case ModeRateLimit:
		if attempt == 1 {
			return fault{Kind: faultHTTP, Name: mode, Status: 429, RetryAfter: 1, Error: rateLimitBody}
		}
	case ModeThrottleForever:
		return fault{Kind: faultHTTP, Name: mode, Status: 429, RetryAfter: 1, Error: rateLimitBody}
	case ModeNetwork:
		if attempt <= 3 {
			return fault{Kind: faultHangUp, Name: mode}
		}
	case ModeServerError:
		if attempt <= 2 {
			return fault{Kind: faultHTTP, Name: mode, Status: 503, Error: serverErrorBody}
		}
	case ModeOverloaded:
		if attempt == 1 {
			return fault{Kind: faultHTTP, Name: mode, Status: 529, RetryAfter: 1, Error: overloadedBody}
		}
	case ModeTruncatedStart:
		if attempt == 1 {
			return fault{Kind: faultTruncatedStart, Name: mode}
		}
	case ModeTruncated:
		return fault{Kind: faultTruncated, Name: mode}
	case ModeSchema:
		return fault{Kind: faultSchema, Name: mode}
	case ModeRefusal:
		return fault{Kind: faultRefusal, Name: mode}
	case ModeBudget:
		return fault{Kind: faultHTTP, Name: mode, Status: 429, Error: budgetBody}
	case ModeUnknown:
		return fault{Kind: faultHTTP, Name: mode, Status: 422, Error: unknownBody}
	case ModeSlowStream:
		return fault{Kind: faultSlow, Name: mode}
	}
	return fault{}
}

// refusalText is what the model says when it declines.
const refusalText = "I can't help with that request."
