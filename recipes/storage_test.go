package recipes

import "testing"

func TestStorageBackendLoad(t *testing.T) {
	v := exampleValue(t)
	set(t, v, "/global/storage", y(t, `{backend: postgres, postgres: {dsn_env: JUNCTION_POSTGRES_DSN, max_conns: 16}}`))
	doc, err := Parse(toJSON(t, v))
	if err != nil {
		t.Fatal(err)
	}
	st := doc.Global.Storage
	if StorageBackend(st) != StorageBackendPostgres || st.Postgres.DSNEnv != "JUNCTION_POSTGRES_DSN" || st.Postgres.MaxConns != 16 {
		t.Fatalf("storage %+v %+v", st, st.Postgres)
	}
	if StorageBackend(nil) != StorageBackendEmbedded || StorageBackend(&Storage{}) != StorageBackendEmbedded {
		t.Fatal("the default backend is not embedded")
	}
}

func TestStorageBackendProblems(t *testing.T) {
	const p = "/global/storage"
	for _, tt := range []struct{ name, cfg, path, code, msg string }{
		{"unknown backend", `{backend: redis}`, p + "/backend", "", ""},
		{"postgres without settings", `{backend: postgres}`, p + "/postgres", CodeMissingField, "dsn_env"},
		{"no dsn_env", `{backend: postgres, postgres: {max_conns: 4}}`, p + "/postgres/dsn_env", "", ""},
		{"a DSN in dsn_env", `{backend: postgres, postgres: {dsn_env: "postgres://u@h/db"}}`, p + "/postgres/dsn_env", "", ""},
		{"zero-size pool", `{backend: postgres, postgres: {dsn_env: PG, max_conns: -1}}`, p + "/postgres/max_conns", "", ""},
		{"postgres settings without the backend", `{postgres: {dsn_env: PG}}`, p + "/postgres", CodeInvalidValue, "backend: postgres"},
		{"unknown field", `{backend: postgres, postgres: {dsn_env: PG, dsn: x}}`, p + "/postgres/dsn", CodeUnknownField, ""},
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
