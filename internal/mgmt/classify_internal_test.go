package mgmt

import (
	"errors"
	"net/http"
	"testing"

	"github.com/junction-router/junction/engine/signal"
)

// TestBatchErrorCodes: a batch's server-side failures carry document 001's
// batch codes; client errors keep theirs.
func TestBatchErrorCodes(t *testing.T) {
	for _, c := range []struct {
		in   error
		code string
	}{
		{newErr(http.StatusServiceUnavailable, CodeModelNotLoaded, "no model"), CodeUnifiedClassifierUnavailable},
		{newErr(http.StatusInternalServerError, CodeClassificationError, "failed"), CodeUnifiedClassificationError},
		{errors.New("plain"), CodeUnifiedClassificationError},
		{newErr(http.StatusBadRequest, CodeTextTooLong, "long"), CodeTextTooLong},
	} {
		var ae *apiError
		if !errors.As(batchError(c.in), &ae) || ae.body.Error.Code != c.code {
			t.Errorf("batchError(%v) = %+v, want code %s", c.in, ae, c.code)
		}
	}
}

type typedClassifier struct {
	signal.Classifier
	mt string
}

func (c typedClassifier) ModelType() string { return c.mt }

// TestArchRank: BERT-type and RoBERTa-type models rank before
// ModernBERT-type, which ranks before other and untyped classifiers
// (document 001, model selection for batch).
func TestArchRank(t *testing.T) {
	lex, err := signal.LexicalDomain()
	if err != nil {
		t.Fatal(err)
	}
	for mt, want := range map[string]int{"bert": 0, "roberta": 0, "xlm-roberta": 0, "distilbert": 0, "modernbert": 1, "ModernBERT": 1, "glove-linear": 2} {
		if got := archRank(typedClassifier{lex, mt}); got != want {
			t.Errorf("model_type %q: rank %d, want %d", mt, got, want)
		}
	}
	if archRank(lex) != 2 {
		t.Error("an untyped classifier ranks before typed ones")
	}
}
