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
	set(t, v, "/global/state", y(t, `{backend: redis, redis: {mode: cluster, addresses: ["10.0.0.1:7000", "10.0.0.2:7000"], key_prefix: "prod:"}}`))
	doc, err = Parse(toJSON(t, v))
	if err != nil {
		t.Fatal(err)
	}
	if r := doc.Global.State.Redis; r.Mode != StateRedisCluster || len(r.Addresses) != 2 || r.Addresses[1] != "10.0.0.2:7000" || r.Address != "" {
		t.Fatalf("cluster global.state.redis = %+v", r)
	}
	for _, ok := range []string{`{backend: redis, redis: {mode: cluster, address: "cluster.example:6379"}}`, `{backend: redis, redis: {mode: standalone, address: "h:6379"}}`} {
		set(t, v, "/global/state", y(t, ok))
		if _, err := Parse(toJSON(t, v)); err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
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
		{"unknown mode", `{backend: redis, redis: {mode: sentinel, address: "h:6379"}}`, p + "/redis/mode", "", ""},
		{"addresses without cluster mode", `{backend: redis, redis: {addresses: ["h:7000"]}}`, p + "/redis/addresses", CodeInvalidValue, "mode: cluster"},
		{"cluster without nodes", `{backend: redis, redis: {mode: cluster}}`, p + "/redis/addresses", CodeMissingField, "host:port"},
		{"cluster with address and addresses", `{backend: redis, redis: {mode: cluster, address: "h:7000", addresses: ["h:7001"]}}`, p + "/redis/address", CodeInvalidValue, "into addresses"},
		{"cluster node without a port", `{backend: redis, redis: {mode: cluster, addresses: ["h:7000", "h"]}}`, p + "/redis/addresses/1", CodeInvalidValue, "host:port"},
		{"cluster with a database", `{backend: redis, redis: {mode: cluster, addresses: ["h:7000"], db: 3}}`, p + "/redis/db", CodeInvalidValue, "database 0 only"},
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
