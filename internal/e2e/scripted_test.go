package e2e

import "github.com/keelrun/keel/internal/contract"

// scriptedInput marks a session started by the client directly as one that asks for the scripted
// model, as the starter does with gateway.fake: a worker whose gateway is the in-process fake
// serves no other.
func scriptedInput(in contract.SessionInput) contract.SessionInput {
	in.Endpoint = &contract.Endpoint{Scripted: true}
	return in
}
