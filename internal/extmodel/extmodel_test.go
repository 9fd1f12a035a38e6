package extmodel_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/extmodel"
	"github.com/junction-router/junction/internal/extmodel/extmodeltest"
	"github.com/junction-router/junction/recipes"
)

var question = extmodel.Question{Task: "Does the text need fact checking?", Labels: []string{"needs_fact_check", "no_fact_check"}, Input: "The moon is 384,400 km away."}

func client(t *testing.T, j *extmodeltest.Judge, timeout int) *extmodel.Client {
	t.Helper()
	c, err := extmodel.New(j.ExternalModel("judge", recipes.ExternalRoleClassification, timeout), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClassifyAsksAConstrainedQuestion(t *testing.T) {
	j := extmodeltest.New(t, extmodeltest.Answer{Content: " Needs_Fact_Check.\n"})
	got, err := client(t, j, 2).Classify(context.Background(), question)
	if err != nil || got != "needs_fact_check" {
		t.Fatalf("Classify = %q, %v; want needs_fact_check", got, err)
	}
	reqs := j.Requests()
	if len(reqs) != 1 {
		t.Fatalf("judge got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "fake-judge" || r.Temperature != 0 || r.MaxTokens <= 0 || r.MaxTokens > 32 || r.User != question.Input {
		t.Fatalf("request = %+v", r)
	}
	for _, l := range question.Labels {
		if !strings.Contains(r.System, l) {
			t.Fatalf("system prompt %q does not name label %q", r.System, l)
		}
	}
	if r.Authorization != "" {
		t.Fatalf("no api_key_env, yet Authorization = %q", r.Authorization)
	}
}

func TestClassifyRejectsAnythingButALabel(t *testing.T) {
	for _, answer := range []string{"", "yes", "needs_fact_check because it states a distance", "no_fact_check needs_fact_check"} {
		j := extmodeltest.New(t, extmodeltest.Answer{Content: answer})
		if got, err := client(t, j, 2).Classify(context.Background(), question); !errors.Is(err, extmodel.ErrUnparseable) {
			t.Errorf("answer %q: Classify = %q, %v; want ErrUnparseable", answer, got, err)
		}
	}
}

func TestClassifyUpstreamStatus(t *testing.T) {
	j := extmodeltest.New(t, extmodeltest.Answer{Status: 503})
	_, err := client(t, j, 2).Classify(context.Background(), question)
	var se *extmodel.StatusError
	if !errors.Is(err, extmodel.ErrUpstream) || !errors.As(err, &se) || se.Status != 503 {
		t.Fatalf("err = %v; want a StatusError 503 matching ErrUpstream", err)
	}
}

func TestClassifyHonoursTheTimeout(t *testing.T) {
	j := extmodeltest.New(t, extmodeltest.Answer{Content: "no_fact_check", Delay: 3 * time.Second})
	start := time.Now()
	_, err := client(t, j, 1).Classify(context.Background(), question)
	if !errors.Is(err, extmodel.ErrTimeout) {
		t.Fatalf("err = %v; want ErrTimeout", err)
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Fatalf("took %s; llm_timeout_seconds is 1", d)
	}
}

func TestClassifySendsTheKeyFromTheEnvironment(t *testing.T) {
	j := extmodeltest.New(t, extmodeltest.Answer{Content: "no_fact_check"})
	m := j.ExternalModel("judge", recipes.ExternalRoleClassification, 2)
	m.APIKeyEnv = "JUNCTION_TEST_JUDGE_KEY"
	if _, err := extmodel.New(m, nil); err == nil || !strings.Contains(err.Error(), "JUNCTION_TEST_JUDGE_KEY") {
		t.Fatalf("unset key variable: err = %v; want one naming the variable", err)
	}
	t.Setenv("JUNCTION_TEST_JUDGE_KEY", "k-123")
	c, err := extmodel.New(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Classify(context.Background(), question); err != nil {
		t.Fatal(err)
	}
	if got := j.Requests()[0].Authorization; got != "Bearer k-123" {
		t.Fatalf("Authorization = %q", got)
	}
}
