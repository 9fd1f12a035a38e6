package hallucination

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/junction-router/junction/plugins/internal/guard"
	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/sdk"
)

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Phases:      []string{"request", "response"},
	Description: "Check the answer against its grounding (RAG passages, tool results) claim by claim with a judge endpoint or word overlap; warn, annotate or block.",
	Operations: []sdk.Operation{
		{Name: "check_supplied", Kind: "preview", Description: "check a supplied_answer against supplied_context by word overlap; nothing is called"},
		{Name: "judge_supplied", Kind: "probe", Description: "check a supplied_answer against supplied_context with the configured detector"},
		{Name: "check_answer", Kind: "mutation", Description: "check the backend's answer against the request's RAG passages and tool results; warn (header), annotate or block"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// OnRequest serves previews and probes of a supplied answer and context.
// Live requests are checked in the response phase.
func (c *Config) OnRequest(req *sdk.Request, res *sdk.Result) error {
	answer, hasAnswer := req.Field(guard.SuppliedAnswer)
	context, hasContext := req.Field(guard.SuppliedContext)
	if hasAnswer {
		res.RemoveField(guard.SuppliedAnswer)
	}
	if hasContext {
		res.RemoveField(guard.SuppliedContext)
	}
	if req.Mode() == sdk.ModeLive {
		res.Skip("the answer is checked in the response phase")
		return nil
	}
	if !hasAnswer {
		res.Skip(fmt.Sprintf("%s: give supplied_answer (and supplied_context, else the request's RAG passages and tool results are the grounding)", req.Mode()))
		return nil
	}
	texts, err := guard.StringOrList(answer)
	if err != nil {
		return fmt.Errorf("supplied_answer %v", err)
	}
	grounding, err := guard.StringOrList(context)
	if err != nil {
		return fmt.Errorf("supplied_context %v", err)
	}
	if !hasContext {
		grounding = Grounding(req.Messages())
	}
	judge := c.judge(req)
	detector := c.Detector
	if req.Mode() == sdk.ModePreview {
		judge, detector = nil, DetectorLexical // a preview calls nothing
	}
	return c.check(res, strings.Join(texts, "\n"), grounding, judge, detector, string(req.Mode())+": supplied_answer")
}

// OnResponse checks the backend's answer against the request's grounding.
func (c *Config) OnResponse(resp *sdk.Response, res *sdk.Result) error {
	grounding := Grounding(resp.Messages())
	if len(grounding) == 0 {
		res.Skip("the request carried no grounding (RAG passages or tool results) to check the answer against")
		return nil
	}
	text, err := guard.AnswerText(resp.Body())
	if err != nil {
		return err
	}
	return c.check(res, text, grounding, c.judge(resp.Request), c.Detector, "answer")
}

// judge is the configured detector's judge for req's handler call (nil:
// the lexical detector).
func (c *Config) judge(req *sdk.Request) Judge {
	if c.Detector != DetectorJudge {
		return nil
	}
	return func(premise, hypothesis string) (string, error) {
		classes, err := req.Classify(c.Binding(), NLIInput(premise, hypothesis))
		if err != nil {
			return "", fmt.Errorf("the judge (classify binding %s) failed: %w", c.Binding(), err)
		}
		if len(classes) == 0 {
			return "", fmt.Errorf("the judge (classify binding %s) gave no label", c.Binding())
		}
		switch l := strings.ToLower(classes[0].Label); l {
		case LabelEntailment, LabelNeutral, LabelContradiction:
			return l, nil
		default:
			return "", fmt.Errorf("the judge (classify binding %s) answered %q, not entailment, neutral or contradiction", c.Binding(), classes[0].Label)
		}
	}
}

func (c *Config) check(res *sdk.Result, text string, grounding []string, judge Judge, detector, what string) error {
	if strings.TrimSpace(text) == "" {
		res.Skip(what + " has no text to check")
		return nil
	}
	text, cut := guard.Cut(text, guard.MaxText)
	ch, err := c.Evaluate(text, grounding, judge)
	if err != nil {
		return err
	}
	if len(ch.Claims) == 0 {
		res.Skip(fmt.Sprintf("%s has no claims of %d words or more", what, c.MinClaimWords))
		return nil
	}
	res.Value("detector", detector)
	res.Value("claims", strconv.Itoa(len(ch.Claims)))
	res.Value("unsupported", strconv.Itoa(len(ch.Unsupported)))
	res.Value("unsupported_spans", guard.Spans(ch.Unsupported))
	res.Value("labels", strings.Join(ch.Labels, ","))
	if cut {
		res.Value("truncated", strconv.Itoa(guard.MaxText))
	}
	if ch.ContextCut {
		res.Value("context_truncated", strconv.Itoa(c.MaxContextChars))
	}
	res.SetHeader(c.Header, c.HeaderValue(ch, detector))
	if !ch.Flagged {
		res.Value("verdict", "supported")
		res.Detail(fmt.Sprintf("%s: %d of %d claims unsupported (below min_unsupported %d)", what, len(ch.Unsupported), len(ch.Claims), c.MinUnsupported))
		return nil
	}
	res.Value("verdict", "unsupported")
	res.Value("action", c.Action)
	res.Detail(fmt.Sprintf("%s: %d of %d claims unsupported: %s", what, len(ch.Unsupported), len(ch.Claims), c.Action))
	switch c.Action {
	case ActionBlock:
		res.Respond(c.BlockStatus, c.Message)
	case ActionAnnotate:
		res.Respond(200, text+"\n\n"+c.Message)
	}
	return nil
}

// Grounding is what an answer must be supported by: the tool results
// (role tool: rag's tool injection, and any function results) and the
// system messages after the first message (rag's system injection follows
// the instructions). The leading system prompt is instructions, not
// evidence.
func Grounding(msgs []sdk.Message) []string {
	var out []string
	for i, m := range msgs {
		if strings.TrimSpace(m.Content) == "" {
			continue
		}
		if m.Role == "tool" || m.Role == "function" || (m.Role == "system" && i > 0) {
			out = append(out, m.Content)
		}
	}
	return out
}
