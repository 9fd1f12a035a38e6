package mgmt_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/ingest"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/retrieval"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/sqlite"
	"github.com/junction-router/junction/recipes"
)

func init() {
	// The knowledge-base export is NDJSON: the document gives one line's
	// schema; every line must parse, and the first is what is checked.
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
		var first any = map[string]any{}
		sc := bufio.NewScanner(body)
		sc.Buffer(nil, 1<<20)
		for n := 0; sc.Scan(); n++ {
			var v any
			if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
				return nil, fmt.Errorf("line %d: %v", n+1, err)
			}
			if n == 0 {
				first = v
			}
		}
		return first, sc.Err()
	})
}

// storageEnv is the management API over a real SQLite store in a temporary
// data directory.
type storageEnv struct {
	*env
	store  *scanObserver
	ingest *ingest.Pipeline
	lib    *observedLibrary
}

// observedLibrary is the real retrieval library, counting invalidations.
type observedLibrary struct {
	*retrieval.Library
	mu    sync.Mutex
	inval map[string]int
}

func (l *observedLibrary) Invalidate(id string) {
	l.mu.Lock()
	l.inval[id]++
	l.mu.Unlock()
	l.Library.Invalidate(id)
}

func (l *observedLibrary) invalidations(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inval[id]
}

// scanObserver is the real store, counting what ScanChunks hands out.
type scanObserver struct {
	storage.Store
	chunks atomic.Int64
	done   chan error
}

func (s *scanObserver) ScanChunks(ctx context.Context, ids []string, fn func(storage.Hit, []float32) error) error {
	err := s.Store.ScanChunks(ctx, ids, func(h storage.Hit, v []float32) error {
		s.chunks.Add(1)
		return fn(h, v)
	})
	select {
	case s.done <- err:
	default:
	}
	return err
}

func newStorageEnv(t *testing.T, config string, compile mgmt.CompileFunc, maxFileBytes int64) *storageEnv {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := &scanObserver{Store: db, done: make(chan error, 1)}
	t.Cleanup(func() { st.Close() })
	model, err := embedding.FromConfig(ctx, nil, signal.HashedEmbedder(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cfg atomic.Pointer[mgmt.Config]
	lib := &observedLibrary{inval: map[string]int{}, Library: retrieval.New(retrieval.Options{Store: st, Model: model,
		KnowledgeBase: func(name string) (recipes.KnowledgeBase, bool) {
			return cfg.Load().Runtime().Current().Document().KnowledgeBase(name)
		}})}
	ing := ingest.New(ingest.Options{Store: st, Model: model, OnChange: lib.Invalidate})
	if err := ing.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ing.Close(ctx) })
	if compile == nil {
		compile = compiler(t)
	}
	e := newEnvOpts(t, writeConfig(t, config), compile, func(o *mgmt.Options) {
		o.Storage = &mgmt.StorageOptions{Store: st, Ingest: ing, Library: lib, MaxFileBytes: maxFileBytes}
		o.Replays = &mgmt.ReplayOptions{Store: st}
	})
	cfg.Store(e.cfg)
	return &storageEnv{env: e, store: st, ingest: ing, lib: lib}
}

func baseConfig(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type formPart struct {
	name, filename, body string
}

func multipartBody(t testing.TB, parts ...formPart) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, p := range parts {
		h := textproto.MIMEHeader{}
		cd := fmt.Sprintf(`form-data; name=%q`, p.name)
		if p.filename != "" {
			cd += fmt.Sprintf(`; filename=%q`, p.filename)
			h.Set("Content-Type", "application/octet-stream")
		}
		h.Set("Content-Disposition", cd)
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(w, p.body)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), buf.Bytes()
}

func (e *storageEnv) upload(parts ...formPart) reply {
	e.t.Helper()
	ct, body := multipartBody(e.t, parts...)
	return e.send("POST", "/api/v1/storage/files", ct, body)
}

func (e *storageEnv) uploadDoc(t *testing.T, name, text string) string {
	t.Helper()
	r := must(t, e.upload(formPart{name: "purpose", body: "assistants"}, formPart{name: "file", filename: name, body: text}), 200)
	return r.json(t)["id"].(string)
}

// waitFile polls a vector-store file until it leaves in_progress.
func (e *storageEnv) waitFile(t *testing.T, storeID, fileID string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		f := must(t, e.call("GET", "/api/v1/storage/vector-stores/"+storeID+"/files/"+fileID, nil), 200).json(t)
		if f["status"] != "in_progress" {
			return f
		}
		if time.Now().After(deadline) {
			t.Fatalf("file %s of %s still in progress", fileID, storeID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitActive polls /api/v1/config/hash until the activation is over and
// returns the final hash status.
func (e *env) waitActive(t *testing.T) map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		h := must(t, e.call("GET", "/api/v1/config/hash", nil), 200).json(t)
		if h["activation_status"] != "pending" {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("activation still pending: %v", h)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStorageNotConfigured(t *testing.T) {
	e := newEnv(t, copyBase(t))
	for _, p := range []string{"/api/v1/storage/files", "/api/v1/storage/vector-stores", "/api/v1/storage/knowledge-bases", "/api/v1/storage/memories"} {
		r := must(t, e.call("GET", p, nil), 503)
		if r.errCode(t) != "SERVICE_UNAVAILABLE" || !strings.Contains(string(r.body), "storage is not configured") {
			t.Fatalf("%s: %s", p, r.body)
		}
	}
}

func TestStorageFiles(t *testing.T) {
	e := newStorageEnv(t, baseConfig(t), nil, 1<<20)
	text := "# Returns\n\nItems can be returned within 30 days.\n"
	// purpose before the file: streamed straight into the store.
	f := must(t, e.upload(formPart{name: "purpose", body: "assistants"}, formPart{name: "file", filename: "policy.md", body: text}), 200).json(t)
	if f["object"] != "file" || f["filename"] != "policy.md" || f["purpose"] != "assistants" || f["bytes"] != float64(len(text)) || f["status"] != "processed" || f["created_at"].(float64) < 1e9 {
		t.Fatalf("file object: %v", f)
	}
	id := f["id"].(string)
	// the file before purpose (as OpenAI's Node client sends it): spooled.
	csv := "a,b\n1,2\n"
	g := must(t, e.upload(formPart{name: "file", filename: "data.csv", body: csv}, formPart{name: "purpose", body: "user_data"}), 200).json(t)
	if g["purpose"] != "user_data" || g["bytes"] != float64(len(csv)) {
		t.Fatalf("file-first upload: %v", g)
	}
	must(t, e.upload(formPart{name: "purpose", body: "vision"}, formPart{name: "file", filename: "cat.png", body: "\x89PNG\r\n\x1a\nnot really"}), 200)

	// list, purpose filter, paging
	l := must(t, e.call("GET", "/api/v1/storage/files", nil), 200).json(t)
	if l["object"] != "list" || len(l["data"].([]any)) != 3 || l["has_more"] != false {
		t.Fatalf("list: %v", l)
	}
	l = must(t, e.call("GET", "/api/v1/storage/files?purpose=assistants", nil), 200).json(t)
	if d := l["data"].([]any); len(d) != 1 || d[0].(map[string]any)["id"] != id {
		t.Fatalf("purpose filter: %v", l)
	}
	l = must(t, e.call("GET", "/api/v1/storage/files?limit=2&order=asc", nil), 200).json(t)
	if d := l["data"].([]any); len(d) != 2 || l["has_more"] != true || l["first_id"] != id {
		t.Fatalf("page 1: %v", l)
	}
	l = must(t, e.call("GET", "/api/v1/storage/files?limit=2&order=asc&after="+l["last_id"].(string), nil), 200).json(t)
	if d := l["data"].([]any); len(d) != 1 || l["has_more"] != false {
		t.Fatalf("page 2: %v", l)
	}
	must(t, e.call("GET", "/api/v1/storage/files?limit=0", nil), 400)
	must(t, e.call("GET", "/api/v1/storage/files?order=sideways", nil), 400)

	// read and download
	if got := must(t, e.call("GET", "/api/v1/storage/files/"+id, nil), 200).json(t); got["id"] != id {
		t.Fatalf("get: %v", got)
	}
	c := must(t, e.call("GET", "/api/v1/storage/files/"+id+"/content", nil), 200)
	if string(c.body) != text || c.header.Get("Content-Type") != "text/markdown" || c.header.Get("Content-Length") != fmt.Sprint(len(text)) ||
		c.header.Get("Content-Disposition") != `attachment; filename=policy.md` {
		t.Fatalf("download: %v %q", c.header, c.body)
	}

	// refusals
	for _, tc := range []struct {
		parts []formPart
		code  string
		want  string
	}{
		{[]formPart{{name: "file", filename: "a.md", body: "x"}}, "INVALID_INPUT", "purpose is required"},
		{[]formPart{{name: "purpose", body: "assistants"}}, "INVALID_INPUT", "no file part"},
		{[]formPart{{name: "purpose", body: "homework"}, {name: "file", filename: "a.md", body: "x"}}, "INVALID_INPUT", "assistants, batch, fine-tune, vision, user_data, evals"},
		{[]formPart{{name: "purpose", body: "assistants"}, {name: "file", filename: "tool.exe", body: "MZ"}}, "UNSUPPORTED_FILE", ".md"},
		{[]formPart{{name: "file", filename: "tool.exe", body: "MZ"}, {name: "purpose", body: "assistants"}}, "UNSUPPORTED_FILE", ".txt"},
		{[]formPart{{name: "purpose", body: "assistants"}, {name: "file", filename: "cat.png", body: "png"}}, "UNSUPPORTED_FILE", "purpose=vision"},
		{[]formPart{{name: "purpose", body: "assistants"}, {name: "file", body: "no filename"}}, "INVALID_INPUT", "filename"},
		{[]formPart{{name: "purpose", body: "assistants"}, {name: "extra", body: "x"}}, "INVALID_INPUT", "unknown form field"},
		{[]formPart{{name: "purpose", body: "assistants"}, {name: "file", filename: "a.md", body: "x"}, {name: "file", filename: "b.md", body: "y"}}, "INVALID_INPUT", "one file part"},
	} {
		r := must(t, e.upload(tc.parts...), 400)
		if r.errCode(t) != tc.code || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%v: %s", tc.parts, r.body)
		}
	}
	// malformed multipart: not multipart, no boundary, garbage, truncated
	must(t, e.call("POST", "/api/v1/storage/files", map[string]any{"purpose": "assistants"}), 400)
	must(t, e.send("POST", "/api/v1/storage/files", "multipart/form-data", []byte("x")), 400)
	r := must(t, e.send("POST", "/api/v1/storage/files", "multipart/form-data; boundary=XYZ", []byte("garbage")), 400)
	if !strings.Contains(string(r.body), "malformed multipart") {
		t.Fatalf("garbage: %s", r.body)
	}
	trunc := "--XYZ\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nassistants\r\n--XYZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.md\"\r\n\r\nhalf a fi"
	must(t, e.send("POST", "/api/v1/storage/files", "multipart/form-data; boundary=XYZ", []byte(trunc)), 400)
	// A refused upload keeps nothing (the files above are the 3 accepted).
	if n := len(must(t, e.call("GET", "/api/v1/storage/files", nil), 200).json(t)["data"].([]any)); n != 3 {
		t.Fatalf("%d files after refusals", n)
	}

	// delete
	d := must(t, e.call("DELETE", "/api/v1/storage/files/"+id, nil), 200).json(t)
	if d["id"] != id || d["object"] != "file" || d["deleted"] != true {
		t.Fatalf("delete: %v", d)
	}
	must(t, e.call("GET", "/api/v1/storage/files/"+id, nil), 404)
	must(t, e.call("GET", "/api/v1/storage/files/"+id+"/content", nil), 404)
	r = must(t, e.call("DELETE", "/api/v1/storage/files/"+id, nil), 404)
	if r.errCode(t) != "NOT_FOUND" || !strings.Contains(string(r.body), id) {
		t.Fatalf("404: %s", r.body)
	}
}

// An upload past the limit is refused while it streams: the server stops
// reading near the limit (64 MiB offered, 1 MiB allowed) and keeps nothing.
func TestStorageUploadTooLarge(t *testing.T) {
	e := newStorageEnv(t, baseConfig(t), nil, 1<<20)
	for _, purposeFirst := range []bool{true, false} {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		var sent atomic.Int64
		go func() {
			if purposeFirst {
				_ = mw.WriteField("purpose", "assistants")
			}
			fw, err := mw.CreateFormFile("file", "big.txt")
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			chunk := bytes.Repeat([]byte("all work and no play "), 3200) // 64 KiB
			for i := 0; i < 1024; i++ {
				n, err := fw.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					pw.CloseWithError(err)
					return
				}
			}
			if !purposeFirst {
				_ = mw.WriteField("purpose", "assistants")
			}
			_ = mw.Close()
			_ = pw.Close()
		}()
		req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/storage/files", pr)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("purpose first %v: %v (sent %d bytes)", purposeFirst, err, sent.Load())
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.validate(req, nil, resp, body)
		if resp.StatusCode != 413 || !strings.Contains(string(body), "1048576") || !strings.Contains(string(body), "FILE_TOO_LARGE") {
			t.Fatalf("purpose first %v: %d %s", purposeFirst, resp.StatusCode, body)
		}
		pr.Close()
		t.Logf("purpose first %v: the client got to send %d bytes of 64 MiB before the 413", purposeFirst, sent.Load())
		if n := sent.Load(); n > 16<<20 {
			t.Fatalf("the server read %d bytes of a refused upload", n)
		}
	}
	if n := len(must(t, e.call("GET", "/api/v1/storage/files", nil), 200).json(t)["data"].([]any)); n != 0 {
		t.Fatalf("%d files kept after refused uploads", n)
	}
	// The limit follows the active configuration.
	cfg := must(t, e.call("GET", "/api/v1/config", nil), 200)
	must(t, e.call("PATCH", "/api/v1/config", map[string]any{"global": map[string]any{"storage": map[string]any{"max_file_bytes": 10}}}, "If-Match", cfg.header.Get("ETag")), 200)
	r := must(t, e.upload(formPart{name: "purpose", body: "assistants"}, formPart{name: "file", filename: "a.txt", body: "eleven char"}), 413)
	if !strings.Contains(string(r.body), "limit of 10 bytes") {
		t.Fatalf("configured limit: %s", r.body)
	}
	must(t, e.upload(formPart{name: "purpose", body: "assistants"}, formPart{name: "file", filename: "a.txt", body: "ten chars!"}), 200)
}

func TestStorageVectorStores(t *testing.T) {
	e := newStorageEnv(t, baseConfig(t), nil, 1<<20)
	vs := "/api/v1/storage/vector-stores"
	// create: name required and unique, metadata bounded
	must(t, e.call("POST", vs, map[string]any{}), 400)
	big := map[string]any{}
	for i := 0; i < 17; i++ {
		big[fmt.Sprint("k", i)] = "v"
	}
	must(t, e.call("POST", vs, map[string]any{"name": "x", "metadata": big}), 400)
	must(t, e.call("POST", vs, map[string]any{"name": "x", "colour": "red"}), 400) // unknown field
	must(t, e.call("POST", vs, "{not json"), 400)
	v := must(t, e.call("POST", vs, map[string]any{"name": "support", "metadata": map[string]any{"team": "cx"}}), 200).json(t)
	id := v["id"].(string)
	if v["object"] != "vector_store" || v["name"] != "support" || v["status"] != "completed" || v["embedding_model"] != e.lib.Model().Name() ||
		v["dimensions"] != float64(e.lib.Model().Dimensions()) || v["metadata"].(map[string]any)["team"] != "cx" || v["file_counts"].(map[string]any)["total"] != 0.0 {
		t.Fatalf("create: %v", v)
	}
	r := must(t, e.call("POST", vs, map[string]any{"name": "support"}), 409)
	if r.errCode(t) != "CONFLICT" {
		t.Fatalf("duplicate: %s", r.body)
	}
	other := must(t, e.call("POST", vs, map[string]any{"name": "other"}), 200).json(t)["id"].(string)

	// read, list, update
	must(t, e.call("GET", vs+"/"+id, nil), 200)
	must(t, e.call("GET", vs+"/vs_nope", nil), 404)
	if l := must(t, e.call("GET", vs+"?order=asc", nil), 200).json(t); len(l["data"].([]any)) != 2 || l["first_id"] != id {
		t.Fatalf("list: %v", l)
	}
	u := must(t, e.call("POST", vs+"/"+id, map[string]any{"name": "help", "metadata": map[string]any{"team": "support"}}), 200).json(t)
	if u["name"] != "help" || u["metadata"].(map[string]any)["team"] != "support" {
		t.Fatalf("update: %v", u)
	}
	must(t, e.call("POST", vs+"/"+id, map[string]any{"name": "other"}), 409)
	must(t, e.call("POST", vs+"/vs_nope", map[string]any{"name": "z"}), 404)
	if e.lib.invalidations(id) == 0 {
		t.Fatal("an update did not invalidate the store")
	}

	// attach → completed → search finds it
	doc := e.uploadDoc(t, "returns.md", "Returns are accepted within thirty days of delivery with a receipt.\n\nShipping to Canada takes five business days.")
	img := must(t, e.upload(formPart{name: "purpose", body: "vision"}, formPart{name: "file", filename: "cat.png", body: "png"}), 200).json(t)["id"].(string)
	r = must(t, e.call("POST", vs+"/"+id+"/files", map[string]any{"file_id": img}), 400)
	if r.errCode(t) != "UNSUPPORTED_FILE" {
		t.Fatalf("image attach: %s", r.body)
	}
	must(t, e.call("POST", vs+"/"+id+"/files", map[string]any{}), 400)
	must(t, e.call("POST", vs+"/"+id+"/files", map[string]any{"file_id": "file-nope"}), 404)
	must(t, e.call("POST", vs+"/vs_nope/files", map[string]any{"file_id": doc}), 404)
	must(t, e.call("POST", vs+"/"+id+"/files", map[string]any{"file_id": doc, "chunking_strategy": map[string]any{"type": "static", "static": map[string]any{"max_chunk_size_tokens": 50, "chunk_overlap_tokens": 0}}}), 400)
	must(t, e.call("POST", vs+"/"+id+"/files", map[string]any{"file_id": doc, "attributes": map[string]any{"nested": map[string]any{}}}), 400)
	before := e.lib.invalidations(id)
	a := must(t, e.call("POST", vs+"/"+id+"/files", map[string]any{"file_id": doc, "attributes": map[string]any{"lang": "en", "year": 2024},
		"chunking_strategy": map[string]any{"type": "static", "static": map[string]any{"max_chunk_size_tokens": 200, "chunk_overlap_tokens": 50}}}), 200).json(t)
	if a["object"] != "vector_store.file" || a["id"] != doc || a["vector_store_id"] != id || a["status"] != "in_progress" ||
		a["chunking_strategy"].(map[string]any)["static"].(map[string]any)["max_chunk_size_tokens"] != 200.0 {
		t.Fatalf("attach: %v", a)
	}
	if e.lib.invalidations(id) == before {
		t.Fatal("attach did not invalidate the store")
	}
	must(t, e.call("POST", vs+"/"+id+"/files", map[string]any{"file_id": doc}), 409)
	if f := e.waitFile(t, id, doc); f["status"] != "completed" || f["last_error"] != nil {
		t.Fatalf("ingested: %v", f)
	}
	if l := must(t, e.call("GET", vs+"/"+id+"/files?filter=completed", nil), 200).json(t); len(l["data"].([]any)) != 1 {
		t.Fatalf("completed files: %v", l)
	}
	if l := must(t, e.call("GET", vs+"/"+id+"/files?filter=failed", nil), 200).json(t); len(l["data"].([]any)) != 0 {
		t.Fatalf("failed files: %v", l)
	}
	must(t, e.call("GET", vs+"/"+id+"/files?filter=sideways", nil), 400)
	if got := must(t, e.call("GET", vs+"/"+id, nil), 200).json(t); got["file_counts"].(map[string]any)["completed"] != 1.0 || got["usage_bytes"].(float64) == 0 {
		t.Fatalf("counts: %v", got)
	}

	search := func(body map[string]any) map[string]any {
		t.Helper()
		return must(t, e.call("POST", vs+"/"+id+"/search", body), 200).json(t)
	}
	res := search(map[string]any{"query": "how many days to return an item with a receipt", "max_num_results": 1})
	data := res["data"].([]any)
	if res["object"] != "vector_store.search_results.page" || res["has_more"] != false || res["next_page"] != nil || len(data) != 1 ||
		res["search_query"].([]any)[0] != "how many days to return an item with a receipt" {
		t.Fatalf("search: %v", res)
	}
	hit := data[0].(map[string]any)
	content := hit["content"].([]any)[0].(map[string]any)
	if hit["file_id"] != doc || hit["filename"] != "returns.md" || hit["attributes"].(map[string]any)["lang"] != "en" || content["type"] != "text" || !strings.Contains(content["text"].(string), "thirty days") {
		t.Fatalf("hit: %v", hit)
	}
	res = search(map[string]any{"query": []any{"returns", "receipt"}, "filters": map[string]any{"type": "eq", "key": "lang", "value": "fr"}})
	if len(res["data"].([]any)) != 0 || len(res["search_query"].([]any)) != 2 {
		t.Fatalf("filtered out: %v", res)
	}
	res = search(map[string]any{"query": "returns", "filters": map[string]any{"type": "and", "filters": []any{
		map[string]any{"type": "gte", "key": "year", "value": 2024}, map[string]any{"type": "in", "key": "lang", "value": []any{"en", "de"}}}}})
	if len(res["data"].([]any)) == 0 {
		t.Fatalf("compound filter: %v", res)
	}
	res = search(map[string]any{"query": "returns", "ranking_options": map[string]any{"score_threshold": 1}})
	if len(res["data"].([]any)) != 0 {
		t.Fatalf("threshold 1: %v", res)
	}
	for body, want := range map[string]string{
		`{"query": "x", "filters": {"type": "like", "key": "a", "value": 1}}`: "type must be",
		`{"query": "x", "max_num_results": 51}`:                               "max_num_results",
		`{"query": ""}`:                                                       "query is empty",
		`{"query": 3}`:                                                        "query",
		`{"query": "x", "rewrite_query": true}`:                               "rewrite_query",
		`{"query": "x", "ranking_options": {"score_threshold": 2}}`:           "score_threshold",
	} {
		r := must(t, e.call("POST", vs+"/"+id+"/search", body), 400)
		if !strings.Contains(string(r.body), want) {
			t.Errorf("%s: %s", body, r.body)
		}
	}
	must(t, e.call("POST", vs+"/vs_nope/search", map[string]any{"query": "x"}), 404)
	// a store built with another embedding model is not searched with this one
	alien, err := e.store.CreateVectorStore(context.Background(), storage.NewVectorStore{Name: "alien", EmbeddingModel: "elsewhere:model", Dimensions: 3})
	if err != nil {
		t.Fatal(err)
	}
	r = must(t, e.call("POST", vs+"/"+alien.ID+"/search", map[string]any{"query": "x"}), 409)
	if r.errCode(t) != "EMBEDDING_MODEL_MISMATCH" {
		t.Fatalf("model mismatch: %s", r.body)
	}
	must(t, e.call("DELETE", vs+"/"+alien.ID, nil), 200)

	// a store created with file_ids ingests them
	v2 := must(t, e.call("POST", vs, map[string]any{"name": "bulk", "file_ids": []any{doc}, "chunking_strategy": map[string]any{"type": "auto"}}), 200).json(t)
	if v2["file_counts"].(map[string]any)["total"] != 1.0 {
		t.Fatalf("file_ids: %v", v2)
	}
	e.waitFile(t, v2["id"].(string), doc)
	must(t, e.call("POST", vs, map[string]any{"name": "bad", "file_ids": []any{img}}), 400)
	if l := must(t, e.call("GET", vs, nil), 200).json(t); len(l["data"].([]any)) != 3 {
		t.Fatalf("a refused create left a store: %v", l)
	}

	// detach removes it from search
	dt := must(t, e.call("DELETE", vs+"/"+id+"/files/"+doc, nil), 200).json(t)
	if dt["id"] != doc || dt["object"] != "vector_store.file.deleted" || dt["deleted"] != true {
		t.Fatalf("detach: %v", dt)
	}
	must(t, e.call("GET", vs+"/"+id+"/files/"+doc, nil), 404)
	must(t, e.call("DELETE", vs+"/"+id+"/files/"+doc, nil), 404)
	if res := search(map[string]any{"query": "returns within thirty days"}); len(res["data"].([]any)) != 0 {
		t.Fatalf("detached file still found: %v", res)
	}
	must(t, e.call("GET", "/api/v1/storage/files/"+doc, nil), 200) // the file stays

	// deleting the file detaches it from every store
	bulk := v2["id"].(string)
	before = e.lib.invalidations(bulk)
	must(t, e.call("DELETE", "/api/v1/storage/files/"+doc, nil), 200)
	if e.lib.invalidations(bulk) == before {
		t.Fatal("deleting a file did not invalidate its store")
	}
	must(t, e.call("GET", vs+"/"+bulk+"/files/"+doc, nil), 404)

	// delete a store
	del := must(t, e.call("DELETE", vs+"/"+other, nil), 200).json(t)
	if del["id"] != other || del["object"] != "vector_store.deleted" || del["deleted"] != true {
		t.Fatalf("delete: %v", del)
	}
	must(t, e.call("GET", vs+"/"+other, nil), 404)
	must(t, e.call("DELETE", vs+"/"+other, nil), 404)
}

func TestStorageKnowledgeBases(t *testing.T) {
	var gate atomic.Pointer[chan struct{}]
	base := compiler(t)
	compile := func(ctx context.Context, doc *recipes.Document, hash string) (*engine.Generation, error) {
		if g := gate.Load(); g != nil {
			<-*g
		}
		return base(ctx, doc, hash)
	}
	e := newStorageEnv(t, baseConfig(t), compile, 1<<20)
	vs := "/api/v1/storage/vector-stores"
	kbs := "/api/v1/storage/knowledge-bases"
	store := must(t, e.call("POST", vs, map[string]any{"name": "manuals"}), 200).json(t)["id"].(string)
	var manual strings.Builder
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&manual, "Step %d: press the red button to start the machine, wait for the green light, then clean the filter of unit %d with warm water.\n\n", i, i)
	}
	doc := e.uploadDoc(t, "manual.txt", manual.String())
	must(t, e.call("POST", vs+"/"+store+"/files", map[string]any{"file_id": doc, "attributes": map[string]any{"kind": "manual"},
		"chunking_strategy": map[string]any{"type": "static", "static": map[string]any{"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 0}}}), 200)
	e.waitFile(t, store, doc)

	// refusals: unknown store, no store, bad filter, bad name (the schema)
	r := must(t, e.call("POST", kbs, map[string]any{"name": "docs", "vector_stores": []any{"vs_missing"}}), 400)
	if !strings.Contains(string(r.body), "vs_missing") {
		t.Fatalf("unknown store: %s", r.body)
	}
	must(t, e.call("POST", kbs, map[string]any{"name": "docs"}), 400)
	must(t, e.call("POST", kbs, map[string]any{"vector_stores": []any{store}}), 400)
	r = must(t, e.call("POST", kbs, map[string]any{"name": "docs", "vector_stores": []any{store}, "filters": map[string]any{"type": "eq"}}), 400)
	if !strings.Contains(string(r.body), "needs a key") {
		t.Fatalf("bad filter: %s", r.body)
	}
	r = must(t, e.call("POST", kbs, map[string]any{"name": "no spaces please", "vector_stores": []any{store}}), 400)
	if r.errCode(t) != "INVALID_CONFIG" {
		t.Fatalf("bad name: %s", r.body)
	}

	// create: 202 pending, then active; a second one meanwhile is refused
	release := make(chan struct{})
	gate.Store(&release)
	c := must(t, e.call("POST", kbs, map[string]any{"name": "docs", "description": "product manuals", "vector_stores": []any{"manuals"}, "top_k": 3,
		"filters": map[string]any{"type": "eq", "key": "kind", "value": "manual"}}), 202).json(t)
	kb := c["knowledge_base"].(map[string]any)
	if c["activation_status"] != "pending" || c["generated_runtime_hash"] == "" || kb["name"] != "docs" || kb["vector_stores"].([]any)[0] != store || kb["top_k"] != 3.0 {
		t.Fatalf("create: %v", c)
	}
	r = must(t, e.call("POST", kbs, map[string]any{"name": "more", "vector_stores": []any{store}}), 409)
	if r.errCode(t) != "CONFIG_ACTIVATION_PENDING" {
		t.Fatalf("second while pending: %s", r.body)
	}
	must(t, e.call("DELETE", kbs+"/docs", nil), 409)
	if _, ok := mustDoc(t, e).KnowledgeBase("more"); ok {
		t.Fatal("a refused mutation was persisted")
	}
	must(t, e.call("GET", kbs+"/docs", nil), 404) // not active yet
	gate.Store(nil)
	close(release)
	h := e.waitActive(t)
	if h["activation_status"] != "active" || h["active_runtime_hash"] != c["generated_runtime_hash"] {
		t.Fatalf("hash after the activation: %v (want active %v)", h, c["generated_runtime_hash"])
	}

	// reads come from the active configuration, with the stores' state
	l := must(t, e.call("GET", kbs, nil), 200).json(t)
	got := l["data"].([]any)[0].(map[string]any)
	st := got["stores"].([]any)[0].(map[string]any)
	if got["name"] != "docs" || got["description"] != "product manuals" || st["id"] != store || st["name"] != "manuals" || st["status"] != "completed" ||
		st["file_counts"].(map[string]any)["completed"] != 1.0 {
		t.Fatalf("list: %v", l)
	}
	must(t, e.call("GET", kbs+"/docs", nil), 200)
	must(t, e.call("GET", kbs+"/nope", nil), 404)
	r = must(t, e.call("POST", kbs, map[string]any{"name": "docs", "vector_stores": []any{store}}), 409)
	if r.errCode(t) != "CONFLICT" {
		t.Fatalf("duplicate: %s", r.body)
	}
	// a store a knowledge base searches cannot be deleted
	must(t, e.call("DELETE", vs+"/"+store, nil), 409)

	// map: metadata and the NDJSON export
	m := must(t, e.call("GET", kbs+"/docs/map/metadata", nil), 200).json(t)
	chunks, _ := m["chunks"].(float64)
	if m["name"] != "docs" || chunks < 2 || m["embedding_model"] != e.lib.Model().Name() || m["retrieval"].(map[string]any)["top_k"] != 3.0 ||
		m["vector_stores"].([]any)[0].(map[string]any)["usage_bytes"].(float64) == 0 {
		t.Fatalf("metadata: %v", m)
	}
	nd := must(t, e.call("GET", kbs+"/docs/map/data.ndjson", nil), 200)
	if nd.header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("content type %q", nd.header.Get("Content-Type"))
	}
	lines := strings.Split(strings.TrimSpace(string(nd.body)), "\n")
	if len(lines) != int(chunks) {
		t.Fatalf("%d lines: %s", len(lines), nd.body)
	}
	for i, ln := range lines {
		var c map[string]any
		if err := json.Unmarshal([]byte(ln), &c); err != nil {
			t.Fatal(err)
		}
		if c["vector_store_id"] != store || c["file_id"] != doc || c["filename"] != "manual.txt" || c["chunk_index"] != float64(i) || c["text"] == "" ||
			c["attributes"].(map[string]any)["kind"] != "manual" || c["vector"] != nil {
			t.Fatalf("line %d: %s", i, ln)
		}
	}
	nd = must(t, e.call("GET", kbs+"/docs/map/data.ndjson?include_vectors=true", nil), 200)
	var first map[string]any
	_ = json.Unmarshal([]byte(strings.SplitN(string(nd.body), "\n", 2)[0]), &first)
	if vec, _ := first["vector"].([]any); len(vec) != e.lib.Model().Dimensions() {
		t.Fatalf("vector of %d dimensions: %v", len(vec), first)
	}
	must(t, e.call("GET", kbs+"/docs/map/data.ndjson?include_vectors=maybe", nil), 400)
	must(t, e.call("GET", kbs+"/nope/map/data.ndjson", nil), 404)
	must(t, e.call("GET", kbs+"/nope/map/metadata", nil), 404)

	// replace, then delete
	must(t, e.call("PUT", kbs+"/nope", map[string]any{"vector_stores": []any{store}}), 404)
	must(t, e.call("PUT", kbs+"/docs", map[string]any{"name": "other", "vector_stores": []any{store}}), 400)
	p := must(t, e.call("PUT", kbs+"/docs", map[string]any{"vector_stores": []any{store}, "top_k": 7}), 202).json(t)
	if p["knowledge_base"].(map[string]any)["top_k"] != 7.0 {
		t.Fatalf("replace: %v", p)
	}
	e.waitActive(t)
	if g := must(t, e.call("GET", kbs+"/docs", nil), 200).json(t); g["top_k"] != 7.0 || g["filters"] != nil {
		t.Fatalf("replaced: %v", g)
	}
	// If-Match, when given, must be current.
	must(t, e.call("DELETE", kbs+"/docs", nil, "If-Match", `"stale"`), 412)
	d := must(t, e.call("DELETE", kbs+"/docs", nil, "If-Match", e.etag()), 202).json(t)
	if d["deleted"] != true || d["knowledge_base"].(map[string]any)["name"] != "docs" {
		t.Fatalf("delete: %v", d)
	}
	e.waitActive(t)
	must(t, e.call("GET", kbs+"/docs", nil), 404)
	must(t, e.call("DELETE", kbs+"/docs", nil), 404)
	must(t, e.call("DELETE", vs+"/"+store, nil), 200)

	// the audit log has the mutations (route metadata, no body)
	a := must(t, e.call("GET", "/api/v1/observability/audit?limit=1000", nil), 200)
	for _, action := range []string{"storage.knowledge_base.create", "storage.knowledge_base.replace", "storage.knowledge_base.delete", "storage.vector_store.create", "storage.vector_store.file.attach", "storage.file.create", "config.activate"} {
		if !strings.Contains(string(a.body), `"action":"`+action+`"`) {
			t.Errorf("audit lacks %s", action)
		}
	}
	if strings.Contains(string(a.body), "product manuals") || strings.Contains(string(a.body), "red button") {
		t.Fatal("the audit log holds a body")
	}

	// the data directory and embedding model of stored data need a restart
	for _, patch := range []map[string]any{{"dir": "/elsewhere"}, {"embedding": map[string]any{"endpoint": "http://127.0.0.1:9/v1/embeddings", "model": "m"}}} {
		r := must(t, e.call("PATCH", "/api/v1/config", map[string]any{"global": map[string]any{"storage": patch}}, "If-Match", e.etag()), 409)
		if r.errCode(t) != "RESTART_REQUIRED" || !strings.Contains(string(r.body), "/global/storage/") {
			t.Fatalf("%v: %s", patch, r.body)
		}
	}
}

// mustDoc is the persisted document.
func mustDoc(t *testing.T, e *storageEnv) *recipes.Document {
	t.Helper()
	r := must(t, e.call("GET", "/api/v1/config", nil), 200)
	doc, _, err := recipes.ParseSource(r.body)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestStorageMemories(t *testing.T) {
	e := newStorageEnv(t, baseConfig(t), nil, 1<<20)
	ctx := context.Background()
	remember := func(scope, text string) string {
		v, err := e.lib.Model().Embed(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		m, _, err := e.store.Remember(ctx, storage.Memory{Scope: scope, Text: text, EmbeddingModel: e.lib.Model().Name(), Vector: v[0]})
		if err != nil {
			t.Fatal(err)
		}
		return m.ID
	}
	a := remember("user-1", "prefers tea")
	remember("user-1", "lives in Oslo")
	remember("user-2", "allergic to nuts")
	mem := "/api/v1/storage/memories"
	l := must(t, e.call("GET", mem, nil), 200).json(t)
	if len(l["data"].([]any)) != 3 || l["object"] != "list" {
		t.Fatalf("list: %v", l)
	}
	l = must(t, e.call("GET", mem+"?scope=user-1&limit=1", nil), 200).json(t)
	if d := l["data"].([]any); len(d) != 1 || l["has_more"] != true || d[0].(map[string]any)["scope"] != "user-1" {
		t.Fatalf("scope page: %v", l)
	}
	g := must(t, e.call("GET", mem+"/"+a, nil), 200).json(t)
	if g["id"] != a || g["text"] != "prefers tea" || g["scope"] != "user-1" || g["object"] != "memory" || g["vector"] != nil {
		t.Fatalf("get: %v", g)
	}
	must(t, e.call("GET", mem+"/mem_nope", nil), 404)
	d := must(t, e.call("DELETE", mem+"/"+a, nil), 200).json(t)
	if d["id"] != a || d["deleted"] != true {
		t.Fatalf("delete: %v", d)
	}
	must(t, e.call("GET", mem+"/"+a, nil), 404)
	must(t, e.call("DELETE", mem+"/"+a, nil), 404)
	r := must(t, e.call("DELETE", mem, nil), 400)
	if !strings.Contains(string(r.body), "scope is required") {
		t.Fatalf("no scope: %s", r.body)
	}
	s := must(t, e.call("DELETE", mem+"?scope=user-1", nil), 200).json(t)
	if s["scope"] != "user-1" || s["deleted"] != 1.0 {
		t.Fatalf("delete scope: %v", s)
	}
	if l := must(t, e.call("GET", mem, nil), 200).json(t); len(l["data"].([]any)) != 1 {
		t.Fatalf("after: %v", l)
	}
}

func TestStoragePermissions(t *testing.T) {
	t.Setenv("JUNCTION_TEST_WRITER", "writer-token-1")
	t.Setenv("JUNCTION_TEST_READER", "reader-token-2")
	t.Setenv("JUNCTION_TEST_OTHER", "other-token-3")
	cfg := strings.Replace(baseConfig(t), "    api: {batch_classification: {max_batch_size: 4}}", `    api: {batch_classification: {max_batch_size: 4}}
    management_api:
      auth:
        mode: bearer
        roles:
          - {name: writer, permissions: [data.read, data.write, audit.read, config.read]}
          - {name: reader, permissions: [data.read]}
          - {name: other, permissions: [config.read]}
        tokens:
          - {name: wendy, roles: [writer], env: JUNCTION_TEST_WRITER}
          - {name: rita, roles: [reader], env: JUNCTION_TEST_READER}
          - {name: otto, roles: [other], env: JUNCTION_TEST_OTHER}`, 1)
	e := newStorageEnv(t, cfg, nil, 1<<20)
	must(t, e.call("GET", "/api/v1/storage/files", nil), 401)
	e.token = "other-token-3"
	r := must(t, e.call("GET", "/api/v1/storage/files", nil), 403)
	if r.json(t)["error"].(map[string]any)["required_permission"] != "data.read" {
		t.Fatalf("403: %s", r.body)
	}
	e.token = "reader-token-2"
	must(t, e.call("GET", "/api/v1/storage/vector-stores", nil), 200)
	must(t, e.call("GET", "/api/v1/storage/memories", nil), 200)
	r = must(t, e.call("POST", "/api/v1/storage/vector-stores", map[string]any{"name": "x"}), 403)
	if r.json(t)["error"].(map[string]any)["required_permission"] != "data.write" {
		t.Fatalf("403: %s", r.body)
	}
	must(t, e.upload(formPart{name: "purpose", body: "assistants"}, formPart{name: "file", filename: "a.md", body: "x"}), 403)
	must(t, e.call("DELETE", "/api/v1/storage/memories?scope=u", nil), 403)
	must(t, e.call("POST", "/api/v1/storage/knowledge-bases", map[string]any{"name": "k", "vector_stores": []any{"vs_1"}}), 403)
	e.token = "writer-token-1"
	id := must(t, e.call("POST", "/api/v1/storage/vector-stores", map[string]any{"name": "x"}), 200).json(t)["id"].(string)
	e.token = "reader-token-2"
	must(t, e.call("POST", "/api/v1/storage/vector-stores/"+id+"/search", map[string]any{"query": "anything"}), 200) // a read
	e.token = "writer-token-1"
	a := must(t, e.call("GET", "/api/v1/observability/audit?action=storage.vector_store.create", nil), 200).json(t)
	entries := a["entries"].([]any)
	if len(entries) != 1 {
		t.Fatalf("audit: %v", a)
	}
	en := entries[0].(map[string]any)
	if en["principal"] != "wendy" || en["route"] != "/api/v1/storage/vector-stores" || en["method"] != "POST" || en["status"] != 200.0 {
		t.Fatalf("audit entry: %v", en)
	}
}

// With storage configured, every stored-data route answers through the real
// stack with a documented status and body (unknown ids, empty bodies).
func TestEveryStorageRouteAnswers(t *testing.T) {
	e := newStorageEnv(t, baseConfig(t), nil, 1<<20)
	disc := must(t, e.call("GET", "/api/v1", nil), 200).json(t)["endpoints"].([]any)
	fill := strings.NewReplacer("{name}", "nope", "{id}", "x1", "{file_id}", "f1")
	n := 0
	for _, x := range disc {
		ep := x.(map[string]any)
		path := ep["path"].(string)
		if !strings.HasPrefix(path, "/api/v1/storage/") {
			continue
		}
		n++
		method := ep["method"].(string)
		var body any
		if method != "GET" && method != "DELETE" {
			body = map[string]any{}
		}
		r := e.call(method, fill.Replace(path), body)
		if r.status >= 500 && !strings.Contains(path, "response-cache") && !strings.Contains(path, "context-recovery") {
			t.Errorf("%s %s: %d %s", method, path, r.status, r.body)
		}
		if r.status == 405 || (r.status == 404 && strings.Contains(string(r.body), "no management route")) {
			t.Errorf("%s %s is not routed", method, path)
		}
	}
	if n < 30 {
		t.Fatalf("%d storage routes", n)
	}
}

// The export streams: a client that reads one line and goes away stops the
// scan long before the end (3,000 chunks with vectors, about 30 MB).
func TestStorageExportStopsWhenTheClientGoes(t *testing.T) {
	e := newStorageEnv(t, baseConfig(t), nil, 1<<20)
	ctx := context.Background()
	model := e.lib.Model()
	v, err := e.store.CreateVectorStore(ctx, storage.NewVectorStore{Name: "big", EmbeddingModel: model.Name(), Dimensions: model.Dimensions()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.store.CreateFile(ctx, storage.NewFile{Filename: "big.txt", Purpose: "assistants", MediaType: "text/plain"}, strings.NewReader("big"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.AttachFile(ctx, v.ID, f.ID, nil, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}); err != nil {
		t.Fatal(err)
	}
	const total = 3000
	chunks := make([]storage.Chunk, total)
	for i := range chunks {
		vec := make([]float32, model.Dimensions())
		vec[i%len(vec)] = 1
		chunks[i] = storage.Chunk{Index: i, Text: fmt.Sprintf("chunk %d", i), Tokens: 2, Vector: vec}
	}
	if err := e.store.CompleteFile(ctx, v.ID, f.ID, chunks); err != nil {
		t.Fatal(err)
	}
	must(t, e.call("POST", "/api/v1/storage/knowledge-bases", map[string]any{"name": "big", "vector_stores": []any{v.ID}}), 202)
	if h := e.waitActive(t); h["activation_status"] != "active" {
		t.Fatalf("activation: %v", h)
	}
	resp, err := http.Get(e.srv.URL + "/api/v1/storage/knowledge-bases/big/map/data.ndjson?include_vectors=true")
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.Contains(line, `"chunk_index":0`) {
		t.Fatalf("first line %q: %v", line, err)
	}
	resp.Body.Close()
	select {
	case <-e.store.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the export went on after the client left")
	}
	if n := e.store.chunks.Load(); n >= total {
		t.Fatalf("the export read all %d chunks for a client that left after one line", n)
	} else {
		t.Logf("the export stopped after %d of %d chunks", n, total)
	}
}
