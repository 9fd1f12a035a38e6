package sdk

import "testing"

func TestObjectFieldAndArrayElem(t *testing.T) {
	body := []byte(` {"model":"a","nested":{"messages":[1]},"messages":[{"role":"system","content":"x, \"y\" ]"},{"role":"user"}] , "n": 3 }`)
	if v, ok := objectField(body, "n"); !ok || string(v) != "3" {
		t.Fatalf("n = %s %v", v, ok)
	}
	msgs, ok := objectField(body, "messages")
	if !ok {
		t.Fatal("no messages")
	}
	m1, ok := arrayElem(msgs, 1)
	if !ok || string(m1) != `{"role":"user"}` {
		t.Fatalf("messages[1] = %s", m1)
	}
	if _, ok := arrayElem(msgs, 2); ok {
		t.Fatal("messages[2] found")
	}
	if _, ok := objectField(body, "missing"); ok {
		t.Fatal("missing found")
	}
	if _, ok := objectField([]byte(`{"a":`), "a"); ok {
		t.Fatal("truncated object answered")
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{`"plain"`: "plain", `"a\nb\"c\\"`: "a\nb\"c\\", `"\u00e9\u4e2d"`: "é中"} {
		if got, ok := unquote([]byte(in)); !ok || got != want {
			t.Errorf("%s = %q %v", in, got, ok)
		}
	}
	for _, bad := range []string{`plain`, `"\u12"`, `"\x"`} {
		if _, ok := unquote([]byte(bad)); ok {
			t.Errorf("%s unquoted", bad)
		}
	}
}

func TestResultBuilders(t *testing.T) {
	var r Result
	r.InsertMessage(0, "system", "be \"brief\"")
	r.SetFieldInt("max_tokens", 10)
	r.Respond(429, "slow down")
	if got := string(r.r.Mutations[0].Value); got != `{"role":"system","content":"be \"brief\""}` {
		t.Fatalf("message = %s", got)
	}
	if string(r.r.Mutations[1].Value) != "10" || r.r.Immediate.Status != 429 {
		t.Fatalf("%+v", r.r)
	}
}
