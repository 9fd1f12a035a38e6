//go:build !race

package plugintest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/junction-router/junction/hostapi/plugintest"
	"github.com/junction-router/junction/plugins/builtin"
)

// TestHarnessStoreFeedsRetrieve is `junction plugin preview --type rag
// --mode probe --store kb=passages.txt`: the harness fills the store from
// the file, and the built-in rag retrieves from it through retrieve.
func TestHarnessStoreFeedsRetrieve(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "passages.txt")
	lines := "Refunds are accepted within 30 days of delivery.\n" +
		"Shipping to Canada takes five business days.\n" +
		`{"id":"fr","text":"Les remboursements sont acceptés sous 30 jours.","attributes":{"lang":"fr"}}` + "\n"
	if err := os.WriteFile(file, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := plugintest.NewHarness(ctx, []string{"kb=" + file})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	rag, err := builtin.Module("rag")
	if err != nil {
		t.Fatal(err)
	}
	body := json.RawMessage(`{"model":"m","messages":[{"role":"user","content":"how many days do I have for refunds?"}]}`)
	res, err := h.Run(ctx, rag, plugintest.Case{Mode: "probe", Config: json.RawMessage(`{"store":"kb","top_k":1}`), Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "applied" || res.BackendCalls != 1 || res.Persisted || res.Values["sources"] != `["passages.txt"]` ||
		!strings.Contains(string(res.Request), "[1] (passages.txt) Refunds are accepted within 30 days of delivery.") {
		t.Fatalf("probe: %+v\n%s", res, res.Request)
	}
	// The lines' attributes are filterable.
	res, err = h.Run(ctx, rag, plugintest.Case{Mode: "probe", Config: json.RawMessage(`{"store":"kb","filters":{"type":"eq","key":"lang","value":"fr"}}`), Body: body})
	if err != nil || res.Values["passages"] != "1" || !strings.Contains(string(res.Request), "Les remboursements") {
		t.Fatalf("filtered probe: %+v %v", res, err)
	}
	// An unknown store: the warning, no context.
	res, err = h.Run(ctx, rag, plugintest.Case{Mode: "probe", Config: json.RawMessage(`{"store":"nowhere"}`), Body: body})
	if err != nil || res.Values["warning"] == "" || len(res.Mutations) != 0 {
		t.Fatalf("unknown store: %+v %v", res, err)
	}
}
