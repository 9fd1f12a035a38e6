package worker

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// classifyBodies are bodies the fast reader must accept (fast true) or
// leave to encoding/json (fast false); for every one it accepts, its answer
// must be the slow reader's.
var classifyBodies = []struct {
	body string
	fast bool
}{
	{`{"input":"hello"}`, true},
	{`{"model":"guard","input":["a","b"],"options":{}}`, true},
	{`{"model":"guard","input":["a"],"options":{"overflow":"reject","max_tokens":12}}`, true},
	{` { "options" : { "max_tokens" : 0 , "overflow":"window" , "return_meta":true} , "input" : [ "x" ] , "model" : "" } ` + "\n", true},
	{`{"input":"line\nbreak \"quoted\" \\ \/ \b\f\r\t \u00e9 \ud83d\ude00 \ud83d x \u0000"}`, true},
	{"{\"input\":\"caf\xe9 na\xc3\xafve \xef\xbf\xbd\"}", true}, // invalid UTF-8 becomes U+FFFD, as encoding/json does
	{`{"input":"a","options":{"max_tokens":-3,"return_meta":false}}`, true},
	{`{"input":"a","options":{"max_tokens":-0}}`, true},
	{`{"model":"m","input":"东京"}`, true},
	// Left to encoding/json: errors and rarer shapes.
	{``, false},
	{`{}`, false},
	{`[]`, false},
	{`null`, false},
	{`{"input":null}`, false},
	{`{"input":[]}`, false},
	{`{"input":[{"text":"a","text_pair":"b"}]}`, false},
	{`{"input":["a",{"context":"c","question":"q"}]}`, false},
	{`{"input":"a","input":"b"}`, false},
	{`{"Input":"a"}`, false},
	{`{"INPUT":"a","MODEL":"m"}`, false},
	{`{"inp\u0075t":"a"}`, false},
	{`{"input":"a","extra":1}`, false},
	{`{"input":"a","model":null}`, false},
	{`{"input":"a","model":3}`, false},
	{`{"input":"a","options":null}`, false},
	{`{"input":"a","options":{"window":{"tokens":4}}}`, false},
	{`{"input":"a","options":{"max_tokens":1.0}}`, false},
	{`{"input":"a","options":{"max_tokens":1e2}}`, false},
	{`{"input":"a","options":{"max_tokens":01}}`, false},
	{`{"input":"a","options":{"max_tokens":99999999999999999999}}`, false},
	{`{"input":"a","options":{"max_tokens":"3"}}`, false},
	{`{"input":"a","options":{"return_meta":1}}`, false},
	{`{"input":"a","options":{"overflow":"x","overflow":"y"}}`, false},
	{`{"input":"a"} {}`, false},
	{`{"input":"a"}}`, false},
	{`{"input":"a",}`, false},
	{`{"input":["a",]}`, false},
	{`{"input":"a\x"}`, false},
	{`{"input":"a` + "\x01" + `"}`, false},
	{`{"input":"a`, false},
	{"\xef\xbb\xbf{\"input\":\"a\"}", false},
}

func TestClassifyBodyFastPathAgrees(t *testing.T) {
	for _, tc := range classifyBodies {
		_, _, fast := decodeClassifyFast([]byte(tc.body))
		if fast != tc.fast {
			t.Errorf("%q: fast path %v, want %v", tc.body, fast, tc.fast)
		}
		agree(t, []byte(tc.body))
	}
	// A long request of the router's shape stays on the fast path.
	long := `{"model":"m","input":["` + strings.Repeat(`word \"q\" `, 5000) + `"],"options":{"overflow":"truncate"}}`
	if _, _, fast := decodeClassifyFast([]byte(long)); !fast {
		t.Error("a long router-shaped body left the fast path")
	}
	agree(t, []byte(long))
}

// agree checks that the fast reader, when it accepts body, answers what
// encoding/json does.
func agree(t testing.TB, body []byte) {
	t.Helper()
	req, inputs, fast := decodeClassifyFast(body)
	if !fast {
		return
	}
	var slow classifyRequest
	if err := decode(body, &slow); err != nil {
		t.Fatalf("%q: the fast path accepted what encoding/json refuses: %v", body, err)
	}
	slowInputs, aerr := parseInputs(slow.Input)
	if aerr != nil {
		t.Fatalf("%q: the fast path accepted input parseInputs refuses: %v", body, aerr)
	}
	slow.Input = nil
	if !reflect.DeepEqual(req, slow) || !reflect.DeepEqual(inputs, slowInputs) {
		t.Fatalf("%q:\nfast %+v %q\nslow %+v %q", body, req, inputs, slow, slowInputs)
	}
	// And decodeClassify answers the same either way.
	r2, in2, aerr := decodeClassify(body)
	if aerr != nil || !reflect.DeepEqual(r2, req) || !reflect.DeepEqual(in2, inputs) {
		t.Fatalf("%q: decodeClassify differs from its fast path: %v", body, aerr)
	}
}

// FuzzClassifyBody: whatever body the fast reader accepts, encoding/json
// accepts too and reads the same request.
func FuzzClassifyBody(f *testing.F) {
	for _, tc := range classifyBodies {
		f.Add([]byte(tc.body))
	}
	seed, _ := json.Marshal(map[string]any{"model": "m", "input": []string{"a\u2028b<>&", "\U0001F600"}, "options": map[string]any{"overflow": "reject", "max_tokens": 7}})
	f.Add(seed)
	f.Fuzz(func(t *testing.T, body []byte) { agree(t, body) })
}
