package requestparams

import (
	"encoding/json"
	"strings"
	"testing"
)

// The full behaviour is checked in plugins/builtin, where the same fixtures
// run this code natively and compiled as the module (TestModulesMatchNative).

func TestRun(t *testing.T) {
	c, err := ParseConfig([]byte(`{"blocked_params":["logit_bias"],"max_tokens_limit":100,"max_n":1,"strip_unknown":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal([]byte(`{"model":"m","messages":[],"logit_bias":{},"max_tokens":500,"n":3,"x_vendor":1,"temperature":0}`), &fields)
	r, err := c.Run(fields)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.Remove, ",") != "logit_bias,x_vendor" || len(r.Set) != 2 || string(r.Set[0].Value) != "100" || string(r.Set[1].Value) != "1" {
		t.Fatalf("%+v", r)
	}
	if r.Detail != "removed logit_bias; lowered max_tokens from 500 to 100; lowered n from 3 to 1; stripped x_vendor" {
		t.Errorf("detail %q", r.Detail)
	}
	_ = json.Unmarshal([]byte(`{"max_tokens":"many"}`), &fields)
	if _, err := c.Run(fields); err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Errorf("a string max_tokens: %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"max_tokens_limit":0}`:       "at least 1",
		`{"max_tokens_limit":1.5}`:     "must be an integer",
		`{"blocked_params":["model"]}`: "cannot block model",
		`{"max_tokens":5}`:             "configuration.max_tokens",
	} {
		if _, err := ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
	if _, err := ParseConfig([]byte(`{"max_tokens_limit":4096.0}`)); err != nil {
		t.Errorf("4096.0 is a whole number: %v", err)
	}
}
