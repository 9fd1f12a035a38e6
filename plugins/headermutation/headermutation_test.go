package headermutation

import (
	"strings"
	"testing"
)

// The full behaviour is checked in plugins/builtin, where the same fixtures
// run this code natively and compiled as the module (TestModulesMatchNative).

func TestOps(t *testing.T) {
	c, err := ParseConfig([]byte(`{"add":[{"name":"x-route-family","value":"code"},{"name":"X-ROUTE-family","value":"b"}],"update":[{"name":"x-team","value":"s3cret"}],"delete":["x-debug"]}`))
	if err != nil {
		t.Fatal(err)
	}
	ops := c.Ops()
	if len(ops) != 4 || ops[0] != (Op{Add, "X-Route-Family", "code"}) || ops[2] != (Op{Set, "X-Team", "s3cret"}) || ops[3] != (Op{Remove, "X-Debug", ""}) {
		t.Fatalf("%+v", ops)
	}
	if c.Detail() != "added X-Route-Family; set X-Team; removed X-Debug" || strings.Contains(c.Detail(), "s3cret") {
		t.Errorf("detail %q", c.Detail())
	}
}

func TestConfigErrors(t *testing.T) {
	for cfg, want := range map[string]string{
		`{"add":[{"name":"authorization","value":"x"}]}`:                 "Authorization cannot be changed",
		`{"delete":["connection"]}`:                                      "hop-by-hop",
		`{"add":[{"name":"x","value":"a\nb"}]}`:                          "line breaks",
		`{"add":[{"name":"x"}]}`:                                         "configuration.add[0].value is required",
		`{"add":[{"name":"x","value":"1"}],"delete":["X"]}`:              "configuration.delete[0]",
		`{"update":[{"name":"x","value":"1"},{"name":"x","value":"2"}]}`: "configuration.update[1].name",
		`{"add":[{"name":"bad name","value":"1"}]}`:                      "not a valid header name",
		`{"add":[{"name":"x","value":"1","extra":true}]}`:                "configuration.add[0].extra",
	} {
		if _, err := ParseConfig([]byte(cfg)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", cfg, err, want)
		}
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{"x-route-family": "X-Route-Family", "X-TEAM": "X-Team", "te": "Te", "a--b": "A--B"} {
		if got := canonical(in); got != want {
			t.Errorf("canonical(%q) = %q, want %q", in, got, want)
		}
	}
}
