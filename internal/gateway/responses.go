package gateway

import (
	"github.com/junction-router/junction/internal/dataplane"
)

// responses serves POST /v1/responses: the data plane translates the request
// into a chat completion (dataplane.Exchange.ResponsesRequest), which takes
// the chat path unchanged (routing, plugins, forwarding, Anthropic
// translation); the exchange translates the answer back to the Responses API
// as it is relayed.
func (x *exchange) responses() {
	if x.gen == nil {
		x.answer(dataplane.ErrorAnswer(dataplane.NoGeneration(), nil))
		return
	}
	body, ok := x.readBody()
	if !ok {
		return
	}
	chatBody, a := x.dp.ResponsesRequest(x.r.Context(), body, nil)
	if a != nil {
		x.answer(a)
		return
	}
	x.chat(chatBody)
}
