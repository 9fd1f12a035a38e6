package junction

import (
	"context"
	"strings"
	"testing"

	"github.com/junction-router/junction/recipes"
)

// New says what to fix in Options before anything is opened.
func TestNewRefusesBadOptions(t *testing.T) {
	doc, err := recipes.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{ConfigPath: "c.yaml", Document: doc}, "give one"},
		{Options{DisableGateway: true, DisableExtproc: true}, "nothing to serve"},
		{Options{ConfigHistoryLimit: -1}, "at least 1"},
		{Options{ConfigWatch: -1}, "0 not to watch"},
		{Options{SignalModels: "bert"}, "use onnx or lexical"},
	} {
		if _, err := New(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// A Server runs once; Shutdown before Run makes Run return at once.
func TestServerRunsOnce(t *testing.T) {
	s, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err != nil {
		t.Fatalf("Run after Shutdown: %v", err)
	}
	<-s.Ready()
	small, err := recipes.Parse([]byte(`{version: v1, providers: {defaults: {default_model: m}, models: [{name: m, backend_refs: [{provider: demo}]}]}, recipes: [{name: default}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, _ = New(Options{Document: small, DataDir: t.TempDir(), DisableGateway: true, ManagementAddr: "off", ExtprocAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", SignalModels: SignalModelsLexical})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "already run") {
		t.Fatalf("a second Run: %v", err)
	}
}

// Stored data goes to Options.DataDir (--data-dir), else global.storage.dir,
// else ./junction-data.
func TestDataDir(t *testing.T) {
	for _, c := range []struct {
		option string
		cfg    *recipes.Storage
		want   string
	}{
		{"", nil, recipes.DefaultStorageDir},
		{"", &recipes.Storage{}, recipes.DefaultStorageDir},
		{"", &recipes.Storage{Dir: "/srv/junction"}, "/srv/junction"},
		{"/tmp/d", &recipes.Storage{Dir: "/srv/junction"}, "/tmp/d"},
	} {
		if got := dataDir(c.option, c.cfg); got != c.want {
			t.Errorf("dataDir(%q, %+v) = %q, want %q", c.option, c.cfg, got, c.want)
		}
	}
}
