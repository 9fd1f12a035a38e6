package responsejailbreak

import (
	"fmt"
	"strconv"

	"github.com/junction-router/junction/plugins/internal/guard"
	"github.com/junction-router/junction/plugins/internal/guest"
	"github.com/junction-router/junction/sdk"
)

// Descriptor is what the module says about itself.
var Descriptor = sdk.Descriptor{
	Type: Type, Version: Version, Schema: Schema,
	Phases:      []string{"request", "response"},
	Description: "Score the backend's answer for jailbreak compliance (the jailbreak classifier or a guardrail external model) and block, redact or annotate it.",
	Operations: []sdk.Operation{
		{Name: "apply_supplied", Kind: "preview", Description: "apply the policy to a supplied_score for a supplied_answer; nothing is called"},
		{Name: "score_supplied", Kind: "probe", Description: "score the supplied_answer with the configured detector and apply the policy"},
		{Name: "check_answer", Kind: "mutation", Description: "score the backend's answer (a streamed one assembled) and block, redact or annotate it"},
	},
}

// Register declares the plugin to the SDK; the guest's init calls it.
func Register() { guest.Register(Descriptor, ParseConfig) }

// OnRequest serves previews and probes: the request carries the answer to
// judge (supplied_answer) and, for a preview, the score to judge it by
// (supplied_score). Live requests are judged in the response phase.
func (c *Config) OnRequest(req *sdk.Request, res *sdk.Result) error {
	answer, hasAnswer := req.Field(guard.SuppliedAnswer)
	score, hasScore := req.Field(guard.SuppliedScore)
	for _, f := range []string{guard.SuppliedAnswer, guard.SuppliedScore} {
		if _, ok := req.Field(f); ok {
			res.RemoveField(f)
		}
	}
	switch req.Mode() {
	case sdk.ModeLive:
		res.Skip("the answer is checked in the response phase")
		return nil
	case sdk.ModePreview:
		if !hasScore {
			res.Skip(fmt.Sprintf("preview: give supplied_score (0 to 1) to see the policy applied; a probe scores supplied_answer with the %s detector (binding %s)", c.Detector, c.Binding()))
			return nil
		}
		s, err := strconv.ParseFloat(string(score), 64)
		if err != nil || s < 0 || s > 1 {
			return fmt.Errorf("supplied_score must be a number from 0 to 1")
		}
		c.report(res, c.Decide(s), "preview: supplied_score")
		return nil
	}
	if !hasAnswer {
		res.Skip("probe: give supplied_answer, the answer to score")
		return nil
	}
	texts, err := guard.StringOrList(answer)
	if err != nil {
		return fmt.Errorf("supplied_answer %v", err)
	}
	return c.check(req, res, joinLines(texts), "probe: supplied_answer")
}

// OnResponse checks the backend's answer.
func (c *Config) OnResponse(resp *sdk.Response, res *sdk.Result) error {
	text, err := guard.AnswerText(resp.Body())
	if err != nil {
		return err
	}
	return c.check(resp.Request, res, text, "answer")
}

func (c *Config) check(req *sdk.Request, res *sdk.Result, text, what string) error {
	if text == "" {
		res.Skip(what + " has no text to check")
		return nil
	}
	text, cut := guard.Cut(text, guard.MaxText)
	classes, err := req.Classify(c.Binding(), text)
	if err != nil {
		return fmt.Errorf("the %s detector (classify binding %s) failed: %w", c.Detector, c.Binding(), err)
	}
	cls := make([]Class, len(classes))
	for i, cl := range classes {
		cls[i] = Class{Label: cl.Label, Score: cl.Score}
	}
	s, err := Score(cls)
	if err != nil {
		return err
	}
	if cut {
		res.Value("truncated", strconv.Itoa(guard.MaxText))
	}
	c.report(res, c.Decide(s), what)
	return nil
}

func (c *Config) report(res *sdk.Result, v Verdict, what string) {
	res.Value("score", fmt.Sprintf("%.4f", v.Score))
	res.Value("detector", c.Detector)
	res.Value("verdict", map[bool]string{true: "flagged", false: "pass"}[v.Hit])
	res.SetHeader(c.Header, v.HeaderValue)
	if !v.Hit {
		res.Detail(fmt.Sprintf("%s passed (jailbreak score %.3f below %g)", what, v.Score, c.threshold))
		return
	}
	res.Value("action", v.Action)
	res.Detail(fmt.Sprintf("%s flagged (jailbreak score %.3f at or above %g): %s", what, v.Score, c.threshold, v.Action))
	if v.Content != "" {
		res.Respond(v.Status, v.Content)
	}
}

func joinLines(s []string) string {
	out := ""
	for i, t := range s {
		if i > 0 {
			out += "\n"
		}
		out += t
	}
	return out
}
