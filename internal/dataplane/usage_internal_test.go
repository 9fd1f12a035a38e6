package dataplane

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/junction-router/junction/engine/cost"
)

// TestDecodeUsageAsEncodingJSON checks the direct reading of usage against
// json.Unmarshal into a *cost.Usage, on the common shape and on every shape
// that must take encoding/json (case-folded keys, fractions, strings, nulls,
// huge numbers, escapes, duplicates).
func TestDecodeUsageAsEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`{"prompt_tokens":27,"completion_tokens":37,"total_tokens":64}`,
		`{"prompt_tokens":27,"completion_tokens":37,"total_tokens":64,"prompt_tokens_details":{"cached_tokens":3},"x":[1,"a"]}`,
		`{}`, `null`, `[]`, `"usage"`, `12`,
		`{"Prompt_Tokens":5}`, `{"PROMPT_TOKENS":5,"prompt_tokens":6}`, `{"prompt_tokens":6,"PROMPT_TOKENS":5}`,
		`{"prompt_\u0074okens":7}`, `{"prompt_tokens":1.5}`, `{"prompt_tokens":1e3}`, `{"prompt_tokens":"7"}`,
		`{"prompt_tokens":null,"total_tokens":3}`, `{"prompt_tokens":-4}`, `{"prompt_tokens":-0}`,
		`{"prompt_tokens":999999999999999999}`, `{"prompt_tokens":9223372036854775807}`, `{"prompt_tokens":9223372036854775808}`,
		`{"prompt_tokens":-9223372036854775808}`, `{"prompt_tokens":1,"prompt_tokens":2}`, `{"total_tokens":true}`,
		`{"prompt_tokens":9,"prompt_tokens_details":null,"cache_creation_input_tokens":4}`,
		`{"prompt_tokens_details":{"cached_tokens":3},"prompt_tokens_details":null}`, `{"Cache_Creation_Input_Tokens":2}`,
		"{\"\u212aey\":1}", "{\"total_tokenſ\":4}", `{ "prompt_tokens" : 3 , "completion_tokens" : 4 }`,
	} {
		var want *cost.Usage
		_ = json.Unmarshal([]byte(raw), &want)
		got := decodeUsage([]byte(raw))
		if (got == nil) != (want == nil) || (got != nil && !reflect.DeepEqual(*got, *want)) {
			t.Errorf("usage %s: got %+v, encoding/json gives %+v", raw, got, want)
		}
	}
}
