package mgmt

import (
	"errors"
	"net/http"
	"testing"
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
