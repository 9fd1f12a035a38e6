package junction

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/internal/storage/sqlite"
	"github.com/junction-router/junction/recipes"
)

// Every server these tests run keeps its stored data in a temporary
// directory (Options.DataDir): none may write into the repository.
func TestMain(m *testing.M) {
	_, before := os.Stat(recipes.DefaultStorageDir)
	code := m.Run()
	if _, after := os.Stat(recipes.DefaultStorageDir); before != nil && after == nil {
		fmt.Fprintf(os.Stderr, "a test ran a server without Options.DataDir: it created %s in the repository\n", recipes.DefaultStorageDir)
		_ = os.RemoveAll(recipes.DefaultStorageDir)
		code = 1
	}
	os.Exit(code)
}

// A running server holds its data directory (a second server on it fails
// to start, saying which directory) and closes the store on Shutdown.
func TestServerHoldsAndClosesStoredData(t *testing.T) {
	doc, err := recipes.Parse([]byte(`{version: v1, providers: {defaults: {default_model: m}, models: [{name: m, backend_refs: [{provider: demo}]}]}, recipes: [{name: default}]}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := Options{Document: doc, DataDir: dir, ListenerAddrs: map[string]string{"public": "127.0.0.1:0"}, DisableExtproc: true,
		ManagementAddr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", SignalModels: SignalModelsLexical}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	<-s.Ready()
	if s.ManagementAddr() == "" {
		t.Fatalf("not serving: %v", <-errc)
	}

	second, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := second.Run(ctx); err == nil || !strings.Contains(err.Error(), dir) {
		t.Log(err)
		t.Errorf("a second server on the same data directory: %v", err)
	}

	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	st, err := sqlite.Open(ctx, dir, sqlite.Options{})
	if err != nil {
		t.Fatalf("the store was not closed on Shutdown: %v", err)
	}
	_ = st.Close()
}
