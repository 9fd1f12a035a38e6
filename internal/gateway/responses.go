package gateway

import (
	"bytes"
	"errors"
	"net/http"
	"time"

	"github.com/junction-router/junction/internal/dataplane"
	"github.com/junction-router/junction/internal/metrics"
	"github.com/junction-router/junction/internal/translate"
)

// responses serves POST /v1/responses: the request is translated into a chat
// completion (internal/translate/responses_openai.go) and takes the chat path
// unchanged (routing, plugins, forwarding, Anthropic translation); what the
// chat path writes is translated back to the Responses API on its way to the
// client by a responsesWriter.
func (x *exchange) responses() {
	if x.gen == nil {
		x.answer(dataplane.ErrorAnswer(dataplane.NoGeneration(), nil))
		return
	}
	body, ok := x.readBody()
	if !ok {
		return
	}
	chatBody, req, err := translate.ResponsesToChat(body)
	if err != nil {
		x.error(metrics.ReasonParseError)
		e := dataplane.NewError(http.StatusBadRequest, dataplane.TypeInvalidRequest, err.Error())
		var te *translate.Error
		if errors.As(err, &te) && te.Param != "" {
			e = e.WithParam(te.Param)
		}
		x.answer(dataplane.ErrorAnswer(e, nil))
		return
	}
	rw := &responsesWriter{ResponseWriter: x.w.ResponseWriter, req: req}
	x.w.ResponseWriter = rw
	defer rw.finish()
	x.chat(chatBody)
}

// responsesWriter translates what the chat path writes into the Responses
// API: a 2xx JSON chat.completion is buffered and rewritten as a response
// object; a 2xx event stream is rewritten chunk by chunk into response.*
// events; anything else (errors, which have the same shape in both APIs)
// passes through.
type responsesWriter struct {
	http.ResponseWriter
	req    *translate.ResponsesRequest
	status int
	mode   writerMode
	buf    bytes.Buffer
	scan   dataplane.EventScanner
	stream *translate.ResponsesStream
	event  []byte
}

type writerMode int

const (
	modeUndecided writerMode = iota
	modePass
	modeJSON
	modeSSE
)

func (w *responsesWriter) WriteHeader(code int) {
	if w.mode != modeUndecided {
		return
	}
	w.status = code
	h := w.Header()
	switch {
	case code/100 == 2 && dataplane.IsEventStream(h.Get("Content-Type")):
		w.mode = modeSSE
		w.stream = translate.NewResponsesStream(w.req, time.Now().Unix())
		h.Del("Content-Length")
		w.ResponseWriter.WriteHeader(code)
	case code/100 == 2:
		w.mode = modeJSON // written by finish, once the whole answer is in
	default:
		w.mode = modePass
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *responsesWriter) Write(b []byte) (int, error) {
	if w.mode == modeUndecided {
		w.WriteHeader(http.StatusOK)
	}
	switch w.mode {
	case modeJSON:
		return w.buf.Write(b)
	case modeSSE:
		var werr error
		err := w.scan.Feed(b, func(_, data []byte) bool {
			if data == nil {
				return true
			}
			events, err := w.stream.Chunk(data)
			if err != nil {
				werr = err
				return false
			}
			w.event = translate.AppendEvents(w.event[:0], events)
			if _, err := w.ResponseWriter.Write(w.event); err != nil {
				werr = err
				return false
			}
			return true
		})
		if err == nil {
			err = werr
		}
		if err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// Flush passes events through as they are written; a buffered answer waits
// for finish.
func (w *responsesWriter) Flush() {
	if w.mode == modeJSON {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// finish writes a buffered answer, translated. An answer that is not a chat
// completion (a backend that answered oddly) goes out as a 502 naming why.
func (w *responsesWriter) finish() {
	if w.mode != modeJSON {
		return
	}
	body, err := translate.ChatToResponse(w.buf.Bytes(), w.req)
	if err != nil {
		e := dataplane.NewError(http.StatusBadGateway, dataplane.TypeUpstream,
			"the backend's answer could not be given as a response: "+err.Error())
		w.Header().Set("Content-Type", "application/json")
		w.ResponseWriter.WriteHeader(e.Status)
		_, _ = w.ResponseWriter.Write(e.Body())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.ResponseWriter.WriteHeader(w.status)
	_, _ = w.ResponseWriter.Write(body)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *responsesWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
