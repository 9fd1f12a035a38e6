package recipes

import "testing"

func TestStateLoad(t *testing.T) {
	v := exampleValue(t)
	set(t, v, "/global/state", y(t, `{backend: redis, redis: {address: "127.0.0.1:6379", db: 2, password_env: REDIS_PW, key_prefix: "prod:", fail_closed: true, tls: {enabled: true, ca_file: ca.pem}}}`))
	doc, err := Parse(toJSON(t, v))
	if err != nil {
		t.Fatal(err)
	}
	st := doc.Global.State
	if StateBackend(st) != StateBackendRedis || st.Redis.Address != "127.0.0.1:6379" || st.Redis.DB != 2 || st.Redis.PasswordEnv != "REDIS_PW" ||
		st.Redis.KeyPrefix != "prod:" || !st.Redis.FailClosed || !st.Redis.TLS.Enabled || st.Redis.TLS.CAFile != "ca.pem" {
		t.Fatalf("global.state = %+v (redis %+v)", st, st.Redis)
	}
	if StateBackend(nil) != StateBackendMemory {
		t.Fatal("no global.state is not the memory backend")
	}
}

func TestStateProblems(t *testing.T) {
	const p = "/global/state"
	for _, tt := range []struct{ name, cfg, path, code, msg string }{
		{"unknown backend", `{backend: etcd}`, p + "/backend", "", ""},
		{"redis without settings", `{backend: redis}`, p + "/redis", CodeMissingField, "address"},
		{"no address", `{backend: redis, redis: {db: 1}}`, p + "/redis/address", "", ""},
		{"a password in password_env", `{backend: redis, redis: {address: "h:6379", password_env: "s3cr3t!"}}`, p + "/redis/password_env", "", ""},
		{"db out of range", `{backend: redis, redis: {address: "h:6379", db: 16}}`, p + "/redis/db", "", ""},
		{"tls files without tls", `{backend: redis, redis: {address: "h:6379", tls: {ca_file: ca.pem}}}`, p + "/redis/tls/enabled", CodeInvalidValue, "enabled: true"},
		{"cert without key", `{backend: redis, redis: {address: "h:6379", tls: {enabled: true, cert_file: c.pem}}}`, p + "/redis/tls", CodeInvalidValue, "key_file"},
		{"redis settings without the backend", `{redis: {address: "h:6379"}}`, p + "/redis", CodeInvalidValue, "backend: redis"},
		{"unknown field", `{backend: redis, redis: {address: "h:6379", cluster: true}}`, p + "/redis/cluster", CodeUnknownField, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := exampleValue(t)
			set(t, v, p, y(t, tt.cfg))
			_, err := Parse(toJSON(t, v))
			if tt.code == "" {
				ve, ok := AsValidationError(err)
				if !ok || len(ve.Problems) == 0 || ve.Problems[0].Path != tt.path {
					t.Fatalf("%s: %v, want a problem at %s", tt.cfg, err, tt.path)
				}
				return
			}
			assertProblem(t, err, tt.path, tt.code, tt.msg)
		})
	}
}

// The cache and the response store may name redis only with global.state's Redis.
func TestStateFeaturesOnRedis(t *testing.T) {
	for _, tt := range []struct{ path, value, state, want string }{
		{"/global/services/response_cache", `{backend: redis}`, `{}`, "/global/services/response_cache/backend"},
		{"/global/services/response_api/store", `redis`, `{backend: memory}`, "/global/services/response_api/store"},
		{"/global/services/response_cache", `{backend: redis}`, `{backend: redis, redis: {address: "h:6379"}}`, ""},
		{"/global/services/response_api/store", `redis`, `{backend: redis, redis: {address: "h:6379"}}`, ""},
	} {
		v := exampleValue(t)
		set(t, v, "/global/state", y(t, tt.state))
		set(t, v, tt.path, y(t, tt.value))
		_, err := Parse(toJSON(t, v))
		if tt.want == "" {
			if err != nil {
				t.Fatalf("%s %s with state %s: %v", tt.path, tt.value, tt.state, err)
			}
			continue
		}
		assertProblem(t, err, tt.want, CodeInvalidValue, "global.state.backend: redis")
	}
}
