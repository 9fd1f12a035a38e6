package ingest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/ingest"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/sqlite"
)

func openStore(t *testing.T, dir string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), dir, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func routerModel(t *testing.T) embedding.Model {
	t.Helper()
	m, err := embedding.FromConfig(context.Background(), nil, signal.HashedEmbedder(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newStore(t *testing.T, st storage.Store, m embedding.Model) storage.VectorStore {
	t.Helper()
	vs, err := st.CreateVectorStore(context.Background(), storage.NewVectorStore{Name: fmt.Sprintf("vs-%d", time.Now().UnixNano()),
		EmbeddingModel: m.Name(), Dimensions: m.Dimensions()})
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// upload uploads a file and attaches it to vs.
func upload(t *testing.T, st storage.Store, vs storage.VectorStore, name, purpose, content string, c storage.Chunking) storage.File {
	t.Helper()
	ctx := context.Background()
	mt, err := ingest.Accept(name, purpose)
	if err != nil {
		mt = "application/octet-stream"
	}
	f, err := st.CreateFile(ctx, storage.NewFile{Filename: name, Purpose: purpose, MediaType: mt}, strings.NewReader(content), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.AttachFile(ctx, vs.ID, f.ID, nil, c); err != nil {
		t.Fatal(err)
	}
	return f
}

func idle(t *testing.T, p *ingest.Pipeline) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.Idle(ctx); err != nil {
		t.Fatalf("ingestion did not finish: %v", err)
	}
}

func closePipeline(t *testing.T, p *ingest.Pipeline) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Error(err)
	}
}

// fileChunks is every chunk of one file in the store, in order.
func fileChunks(t *testing.T, st storage.Store, storeID, fileID string) []string {
	t.Helper()
	var out []string
	err := st.ScanChunks(context.Background(), []string{storeID}, func(h storage.Hit, _ []float32) error {
		if h.FileID == fileID {
			out = append(out, h.Text)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls cond until it holds (10 s at most).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func status(t *testing.T, st storage.Store, storeID, fileID string) storage.VectorStoreFile {
	t.Helper()
	f, err := st.GetVectorStoreFile(context.Background(), storeID, fileID)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPipelineDocuments(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	m := routerModel(t)
	vs := newStore(t, st, m)
	var changes atomic.Int32
	p := ingest.New(ingest.Options{Store: st, Model: m, OnChange: func(id string) {
		if id == vs.ID {
			changes.Add(1)
		}
	}})
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer closePipeline(t, p)

	long := strings.Repeat("Our refund policy covers every order placed online within thirty days. ", 120)
	docs := map[string]struct {
		content string
		want    []string // in the chunks' text
		not     []string
	}{
		"guide.md": {"# Refund guide\n\nRefunds take **five days**.\n\n" + long, []string{"# Refund guide", "Refunds take **five days**."}, nil},
		"page.html": {`<html><head><title>T</title><script>track()</script></head><body><h1>Shipping</h1><p>Parcels ship within <b>two&nbsp;days</b> &amp; arrive <a href="/x">tracked</a>.</p></body></html>`,
			[]string{"Shipping\n\nParcels ship within two days & arrive tracked."}, []string{"track()", "<p>", "&amp;", "T\n"}},
		"people.csv":  {"name,role\nAda,engineer\nGrace,admiral\n", []string{"name: Ada; role: engineer\nname: Grace; role: admiral"}, []string{"name,role"}},
		"config.json": {`{"service":{"name":"billing","ports":[80,443]},"owner":"ops"}`, []string{"service.name: billing\nservice.ports[0]: 80\nservice.ports[1]: 443\nowner: ops"}, []string{"{"}},
	}
	files := map[string]storage.File{}
	for name, d := range docs {
		files[name] = upload(t, st, vs, name, "assistants", d.content, storage.Chunking{MaxTokens: 200, OverlapTokens: 50})
		p.Submit(vs.ID, files[name].ID)
		p.Submit(vs.ID, files[name].ID) // queued once
	}
	idle(t, p)
	for name, d := range docs {
		f := files[name]
		vf := status(t, st, vs.ID, f.ID)
		if vf.Status != storage.StatusCompleted {
			t.Errorf("%s: %s %s %s", name, vf.Status, vf.LastErrorCode, vf.LastErrorMessage)
			continue
		}
		chunks := fileChunks(t, st, vs.ID, f.ID)
		if len(chunks) == 0 || vf.Chunks != len(chunks) {
			t.Errorf("%s: %d chunks, status says %d", name, len(chunks), vf.Chunks)
		}
		all := strings.Join(chunks, "\n")
		for _, w := range d.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: the chunks lack %q:\n%s", name, w, all)
			}
		}
		for _, w := range d.not {
			if strings.Contains(all, w) {
				t.Errorf("%s: the chunks have %q:\n%s", name, w, all)
			}
		}
	}
	if n := len(fileChunks(t, st, vs.ID, files["guide.md"].ID)); n < 4 {
		t.Errorf("a long document in chunks of 200 tokens made %d chunks", n)
	}
	if got := changes.Load(); got != int32(len(docs)) {
		t.Errorf("OnChange called %d times for %d files", got, len(docs))
	}
	// The chunks are searchable with the model's query vectors.
	q, err := m.Embed(ctx, []string{"How long does shipping take for parcels?"})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := st.Search(ctx, storage.Query{StoreIDs: []string{vs.ID}, Vector: q[0], K: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 1 || hits[0].Filename != "page.html" {
		t.Errorf("search for shipping found %+v", hits)
	}
}

// openAIServer speaks the OpenAI embeddings shape: 8-dimensional vectors
// made from the text's bytes. fail, when set, answers a call with an error;
// hold, when set, holds each call until released.
type openAIServer struct {
	*httptest.Server
	calls    atomic.Int32
	inflight atomic.Int32
	peak     atomic.Int32
	mu       sync.Mutex
	fail     func(call int) bool
	hold     chan struct{}
}

func newOpenAI(t *testing.T) *openAIServer {
	o := &openAIServer{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := o.inflight.Add(1)
		defer o.inflight.Add(-1)
		for {
			p := o.peak.Load()
			if n <= p || o.peak.CompareAndSwap(p, n) {
				break
			}
		}
		// Read the body first: only then does the server notice a client
		// that went away (and end r.Context()).
		body, _ := io.ReadAll(r.Body)
		call := int(o.calls.Add(1))
		o.mu.Lock()
		fail, hold := o.fail, o.hold
		o.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		if fail != nil && fail(call) {
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"Rate limit reached for text-embedding-3-small","type":"requests"}}`))
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		_ = json.Unmarshal(body, &req)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, len(req.Input))
		for i, in := range req.Input {
			v := make([]float32, 8)
			for j := range len(in) {
				v[int(in[j])%8]++
			}
			v[0]++
			data[i] = item{Index: i, Embedding: v}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *openAIServer) set(fail func(int) bool, hold chan struct{}) {
	o.mu.Lock()
	o.fail, o.hold = fail, hold
	o.mu.Unlock()
}

func endpointModel(t *testing.T, o *openAIServer) embedding.Model {
	t.Helper()
	m, err := embedding.NewEndpoint(context.Background(), embedding.EndpointOptions{URL: o.URL, Model: "text-embedding-3-small", Dimensions: 8})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPipelineFailures(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	o := newOpenAI(t)
	m := endpointModel(t, o)
	vs := newStore(t, st, m)
	other, err := st.CreateVectorStore(ctx, storage.NewVectorStore{Name: "other-model", EmbeddingModel: "router:hashed-ngrams", Dimensions: 1024})
	if err != nil {
		t.Fatal(err)
	}
	p := ingest.New(ingest.Options{Store: st, Model: m, Concurrency: 1})
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer closePipeline(t, p)

	good := "A line of text. "
	cases := []struct {
		vs            storage.VectorStore
		name, content string
		code, reason  string
		fail          func(int) bool
	}{
		{vs, "latin1.txt", "caf\xe9 cr\xe8me", ingest.CodeInvalidFile, "not UTF-8", nil},
		{vs, "empty.md", "  \n\n ", ingest.CodeInvalidFile, "no text", nil},
		{vs, "bad.json", `{"a": [1, 2}`, ingest.CodeInvalidFile, "JSON cannot be read", nil},
		{vs, "photo.png", "\x89PNG\r\n", ingest.CodeUnsupportedFile, "image", nil},
		{vs, "doc.pdf", "%PDF-1.4", ingest.CodeUnsupportedFile, "accepted are", nil},
		{other, "ok.txt", good, ingest.CodeEmbeddingError, "built with embedding model router:hashed-ngrams (1024 dimensions) but this server embeds with openai:", nil},
		// 200 chunks in batches of 64: the third batch fails, after two
		// succeeded; nothing of the file may be searchable.
		{vs, "ratelimited.txt", strings.Repeat(good, 200*20), ingest.CodeEmbeddingError, "Rate limit reached", func(call int) bool { return call%4 == 3 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o.set(tc.fail, nil)
			defer o.set(nil, nil)
			o.calls.Store(0)
			purpose := "assistants"
			if strings.HasSuffix(tc.name, ".png") {
				purpose = "vision"
			}
			f := upload(t, st, tc.vs, tc.name, purpose, tc.content, storage.Chunking{MaxTokens: 100, OverlapTokens: 0})
			p.Submit(tc.vs.ID, f.ID)
			idle(t, p)
			vf := status(t, st, tc.vs.ID, f.ID)
			if vf.Status != storage.StatusFailed || vf.LastErrorCode != tc.code || !strings.Contains(vf.LastErrorMessage, tc.reason) {
				t.Errorf("%s: %s %s %q, want failed %s saying %q", tc.name, vf.Status, vf.LastErrorCode, vf.LastErrorMessage, tc.code, tc.reason)
			}
			if n := len(fileChunks(t, st, tc.vs.ID, f.ID)); n != 0 {
				t.Errorf("%s: %d chunks left searchable", tc.name, n)
			}
			if tc.fail != nil && o.calls.Load() < 3 {
				t.Errorf("the model was called %d times; the failure was meant to come after some batches succeeded", o.calls.Load())
			}
		})
	}
	// Search over the failed file's store finds nothing of it.
	q, _ := m.Embed(ctx, []string{good})
	hits, err := st.Search(ctx, storage.Query{StoreIDs: []string{vs.ID}, Vector: q[0], K: 10})
	if err != nil || len(hits) != 0 {
		t.Errorf("search found %d hits (%v) in a store of failed files", len(hits), err)
	}
}

func TestPipelineConcurrencyBound(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	o := newOpenAI(t)
	m := endpointModel(t, o)
	vs := newStore(t, st, m)
	hold := make(chan struct{})
	o.set(nil, hold)
	p := ingest.New(ingest.Options{Store: st, Model: m, Concurrency: 2})
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer closePipeline(t, p)
	var ids []string
	for i := range 6 {
		f := upload(t, st, vs, fmt.Sprintf("f%d.txt", i), "assistants", fmt.Sprintf("File number %d has some text.", i), storage.Chunking{})
		ids = append(ids, f.ID)
		p.Submit(vs.ID, f.ID)
	}
	// Two files are being embedded and held; a third worker would show up
	// while they are.
	waitFor(t, func() bool { return o.inflight.Load() >= 2 })
	time.Sleep(100 * time.Millisecond) // room for a third worker, if any
	if n := o.inflight.Load(); n != 2 {
		t.Errorf("%d embedding calls in flight with Concurrency 2", n)
	}
	close(hold)
	idle(t, p)
	if o.peak.Load() != 2 {
		t.Errorf("peak concurrency %d, want 2", o.peak.Load())
	}
	for _, id := range ids {
		if vf := status(t, st, vs.ID, id); vf.Status != storage.StatusCompleted {
			t.Errorf("%s: %s %s", id, vf.Status, vf.LastErrorMessage)
		}
	}
}

func TestPipelineResumesAfterRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStore(t, dir)
	m := routerModel(t)
	vs := newStore(t, st, m)
	f := upload(t, st, vs, "notes.md", "assistants", "# Notes\n\nThe office opens at nine.", storage.Chunking{})
	// Attached, never ingested: the process ends.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = openStore(t, dir)
	defer st.Close()
	if vf := status(t, st, vs.ID, f.ID); vf.Status != storage.StatusInProgress {
		t.Fatalf("after reopening: %s", vf.Status)
	}
	p := ingest.New(ingest.Options{Store: st, Model: m})
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer closePipeline(t, p)
	idle(t, p)
	if vf := status(t, st, vs.ID, f.ID); vf.Status != storage.StatusCompleted || vf.Chunks != 1 {
		t.Errorf("after Start: %s, %d chunks (%s)", vf.Status, vf.Chunks, vf.LastErrorMessage)
	}
	if got := fileChunks(t, st, vs.ID, f.ID); len(got) != 1 || got[0] != "# Notes\n\nThe office opens at nine." {
		t.Errorf("chunks %q", got)
	}
}

func TestPipelineDropsDetachedAndClosesMidway(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	o := newOpenAI(t)
	m := endpointModel(t, o)
	vs := newStore(t, st, m)
	var changed atomic.Int32
	p := ingest.New(ingest.Options{Store: st, Model: m, OnChange: func(string) { changed.Add(1) }})
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// Deleted while being embedded: dropped quietly, nothing stored.
	hold := make(chan struct{})
	o.set(nil, hold)
	f := upload(t, st, vs, "gone.txt", "assistants", "Soon deleted.", storage.Chunking{})
	p.Submit(vs.ID, f.ID)
	waitFor(t, func() bool { return o.inflight.Load() >= 1 })
	if err := st.DeleteFile(ctx, f.ID); err != nil {
		t.Fatal(err)
	}
	close(hold)
	idle(t, p)
	if _, err := st.GetVectorStoreFile(ctx, vs.ID, f.ID); err == nil {
		t.Error("the deleted file is still attached")
	}
	if n := len(fileChunks(t, st, vs.ID, f.ID)); n != 0 {
		t.Errorf("%d chunks of a deleted file", n)
	}
	// A file submitted that is not attached (detached before it ran) is
	// dropped.
	p.Submit(vs.ID, "file-unknown")
	idle(t, p)
	if changed.Load() != 0 {
		t.Errorf("OnChange called %d times for dropped files", changed.Load())
	}
	// Close while a file is held: it returns, and the file stays in
	// progress for the next Start.
	o.set(nil, make(chan struct{}))
	f = upload(t, st, vs, "held.txt", "assistants", "Held text.", storage.Chunking{})
	p.Submit(vs.ID, f.ID)
	waitFor(t, func() bool { return o.inflight.Load() >= 1 })
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	if vf := status(t, st, vs.ID, f.ID); vf.Status != storage.StatusInProgress {
		t.Errorf("a file cancelled by Close is %s, want in_progress", vf.Status)
	}
	p.Submit(vs.ID, f.ID) // after Close: nothing, no panic
}
