package fastresponse

import (
	"strings"
	"testing"
)

// Answering (status 200, the message, later plugins skipped) is checked
// through the host in plugins/builtin and through the gateway, streamed and
// not, in cmd/junction's TestServeBuiltinWasmPlugins.

func TestConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"message":"I can't help with that request."}`))
	if err != nil || c.Message != "I can't help with that request." {
		t.Fatalf("%v %+v", err, c)
	}
	for cfg, want := range map[string]string{
		`{}`:                           "configuration.message is required",
		`{"message":"  "}`:             "must not be empty",
		`{"message":"x","status":403}`: "configuration.status",
		`{"message":5}`:                "configuration.message must be a string",
	} {
		if _, err := ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
}
