//go:build !race

package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests run the junction binary as a separate process (startServe),
// so that it can be killed with SIGKILL and restarted on the same data
// directory.

// handbook is the Markdown document the tests upload, one section per
// chunk of 100 tokens; vacation is the passage a question about leave must
// retrieve.
const (
	vacation = "Every employee receives twenty-seven days of paid vacation leave per calendar year."
	handbook = "# Staff handbook\n\n## Parking\n\n" +
		"The car park behind building C opens at seven in the morning and closes at midnight. Staff park on the upper " +
		"level, visitors on the lower one. Bicycles go in the covered shed by the north gate, which needs a badge. " +
		"Electric cars may charge for up to four hours at the posts near the exit.\n\n" +
		"## Vacation\n\n" + vacation + " Unused vacation days carry over until the end of March of the following " +
		"year. Requests go to your manager at least two weeks ahead, and public holidays do not count against the " +
		"allowance. Part-time staff receive a share in proportion to their hours.\n\n" +
		"## Expenses\n\n" +
		"Receipts for travel expenses are submitted through the finance portal within thirty days of the trip. Meals " +
		"are refunded up to a daily limit that depends on the city, and taxis only when no train or bus serves the " +
		"destination. Approved claims are paid with the next monthly salary.\n"
)

// upstream is an OpenAI-compatible backend that records the bodies it is
// sent.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []string
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.bodies = append(u.bodies, string(b))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) last() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bodies) == 0 {
		return ""
	}
	return u.bodies[len(u.bodies)-1]
}

// storageConfig routes everything to model m on up, with rag on the
// vector store named "handbook" (created later through the API) and memory
// (scoped by the request's user); a text with the word "policy" has rag on
// the knowledge base "staff" instead (with the base's own top_k).
func storageConfig(t *testing.T, up, global string) (cfg string, p servePorts) {
	p = newServePorts(t)
	return writeServeConfig(t, p, fmt.Sprintf(`providers:
  defaults: {default_model: m}
  models:
    - {name: m, backend_refs: [{base_url: %s/v1, provider: openai}]}
recipes:
  - name: default
    signals:
      keywords: [{name: policy, keywords: [policy]}]
    decisions:
      - name: kb
        priority: 10
        rules: {operator: OR, conditions: [{type: keyword, name: policy}]}
        modelRefs: [{model: m}]
        plugins:
          - {type: rag, configuration: {store: staff, on_failure: warn}}
      - name: all
        rules: {operator: AND, conditions: []}
        modelRefs: [{model: m}]
        plugins:
          - {type: rag, configuration: {store: handbook, top_k: 1, on_failure: warn}}
          - {type: memory, configuration: {min_score: -1}}
`, up), global), p
}

// upload is a multipart form with a file and its purpose.
func upload(t *testing.T, filename, purpose, content string) *multipartBody {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if err := mw.WriteField("purpose", purpose); err != nil {
		t.Fatal(err)
	}
	fw, err := mw.CreateFormFile("file", filename)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(fw, content)
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &multipartBody{data: b.Bytes(), ctype: mw.FormDataContentType()}
}

type fileObject struct {
	ID       string `json:"id"`
	Filename string `json:"filename"`
	Bytes    int64  `json:"bytes"`
	Purpose  string `json:"purpose"`
}

type vectorStoreObject struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	FileCounts struct {
		InProgress int `json:"in_progress"`
		Completed  int `json:"completed"`
		Total      int `json:"total"`
	} `json:"file_counts"`
}

type vectorStoreFileObject struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	LastError *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"last_error"`
}

type searchPage struct {
	Data []struct {
		FileID   string  `json:"file_id"`
		Filename string  `json:"filename"`
		Score    float64 `json:"score"`
		Content  []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"data"`
}

// addHandbook uploads the handbook, creates the vector store "handbook",
// attaches the file and waits until it is completed.
func (s *storedServer) addHandbook() (fileID, storeID string) {
	s.t.Helper()
	var f fileObject
	s.call("POST", "/api/v1/storage/files", upload(s.t, "handbook.md", "assistants", handbook), http.StatusOK, &f)
	if !strings.HasPrefix(f.ID, "file-") || f.Filename != "handbook.md" || f.Bytes != int64(len(handbook)) {
		s.t.Fatalf("uploaded file: %+v", f)
	}
	var vs vectorStoreObject
	s.call("POST", "/api/v1/storage/vector-stores", map[string]any{"name": "handbook"}, http.StatusOK, &vs)
	if !strings.HasPrefix(vs.ID, "vs_") || vs.Name != "handbook" {
		s.t.Fatalf("vector store: %+v", vs)
	}
	var vf vectorStoreFileObject
	s.call("POST", "/api/v1/storage/vector-stores/"+vs.ID+"/files", map[string]any{"file_id": f.ID,
		"chunking_strategy": map[string]any{"type": "static", "static": map[string]any{"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 0}}},
		http.StatusOK, &vf)
	s.awaitCompleted(vs.ID, f.ID)
	return f.ID, vs.ID
}

// awaitCompleted polls a vector store's file until ingestion is completed.
func (s *storedServer) awaitCompleted(storeID, fileID string) {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var vf vectorStoreFileObject
		s.call("GET", "/api/v1/storage/vector-stores/"+storeID+"/files/"+fileID, nil, http.StatusOK, &vf)
		switch vf.Status {
		case "completed":
			return
		case "failed", "cancelled":
			s.t.Fatalf("ingestion of %s: %+v", fileID, vf)
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("ingestion of %s still %q after 30s", fileID, vf.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *storedServer) search(storeID, query string) searchPage {
	s.t.Helper()
	var page searchPage
	s.call("POST", "/api/v1/storage/vector-stores/"+storeID+"/search", map[string]any{"query": query, "max_num_results": 3}, http.StatusOK, &page)
	return page
}

type memoryObject struct {
	ID        string `json:"id"`
	Scope     string `json:"scope"`
	Text      string `json:"text"`
	CreatedAt int64  `json:"created_at"`
}

// memories lists a scope's memories.
func (s *storedServer) memories(scope string) []memoryObject {
	s.t.Helper()
	var page struct {
		Data []memoryObject `json:"data"`
	}
	s.call("GET", "/api/v1/storage/memories?scope="+scope, nil, http.StatusOK, &page)
	return page.Data
}

// chat sends a chat completion through the gateway, from user (when not
// empty); text starting with [ is the message's content parts as JSON.
func (s *storedServer) chat(user, text string) {
	s.t.Helper()
	content, _ := json.Marshal(text)
	if strings.HasPrefix(text, "[") { // content parts, as JSON
		content = []byte(text)
	}
	body := fmt.Sprintf(`{"model":"MoM","messages":[{"role":"user","content":%s}]}`, content)
	if user != "" {
		body = fmt.Sprintf(`{"model":"MoM","user":%q,"messages":[{"role":"user","content":%s}]}`, user, content)
	}
	resp, err := http.Post(s.gw+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("chat: %d %s", resp.StatusCode, raw)
	}
}

const question = "How many days of paid vacation leave does an employee get?"

// A Markdown document uploaded, attached and ingested through the
// management API is retrieved by the rag plugin of a live request (the
// passage reaches the upstream), and a search answers the same after a
// restart on the same data directory.
func TestServeRAGEndToEnd(t *testing.T) {
	up := newUpstream(t)
	cfg, p := storageConfig(t, up.URL, "")
	data := filepath.Join(t.TempDir(), "data")
	s := startServe(t, cfg, data, p)
	if st, err := os.Stat(data); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("data directory: %v %v", st, err)
	}
	_, storeID := s.addHandbook()

	s.chat("", question)
	sent := up.last()
	if !strings.Contains(sent, vacation) {
		t.Fatalf("the retrieved passage did not reach the upstream; it was sent:\n%s\nserve said: %s", sent, s.stderr.String())
	}
	if strings.Contains(sent, "car park") {
		t.Errorf("top_k 1 sent more than the best passage:\n%s", sent)
	}

	before := s.search(storeID, question)
	if len(before.Data) == 0 || !strings.Contains(before.Data[0].Content[0].Text, vacation) || before.Data[0].Filename != "handbook.md" {
		t.Fatalf("search before the restart: %+v", before)
	}
	s.stop()

	s = startServe(t, cfg, data, p)
	after := s.search(storeID, question)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("search after the restart differs:\nbefore %+v\nafter  %+v", before, after)
	}
	// And the plugin retrieves after the restart too.
	s.chat("", question)
	if !strings.Contains(up.last(), vacation) {
		t.Errorf("after the restart the passage did not reach the upstream:\n%s", up.last())
	}

	// A knowledge base created through the API serves rag once its
	// configuration is active, with its own top_k.
	policy := "What is the vacation policy: how many days of paid vacation leave does an employee get?"
	s.chat("", policy)
	if strings.Contains(up.last(), vacation) {
		t.Fatalf("retrieved from a knowledge base that does not exist yet:\n%s", up.last())
	}
	var mut struct {
		ActivationStatus     string `json:"activation_status"`
		GeneratedRuntimeHash string `json:"generated_runtime_hash"`
	}
	s.call("POST", "/api/v1/storage/knowledge-bases", map[string]any{"name": "staff", "vector_stores": []string{"handbook"}, "top_k": 1},
		http.StatusAccepted, &mut)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var h struct {
			ActiveRuntimeHash string `json:"active_runtime_hash"`
			ActivationStatus  string `json:"activation_status"`
		}
		s.call("GET", "/api/v1/config/hash", nil, http.StatusOK, &h)
		if h.ActiveRuntimeHash == mut.GeneratedRuntimeHash {
			break
		}
		if h.ActivationStatus == "failed" || time.Now().After(deadline) {
			t.Fatalf("the knowledge base's configuration did not activate: %+v", h)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.chat("", policy)
	if sent := up.last(); !strings.Contains(sent, vacation) || strings.Contains(sent, "car park") {
		t.Errorf("rag on the knowledge base (top_k 1) sent:\n%s", sent)
	}
	s.stop()
}

// Every acknowledged write survives kill -9: an uploaded file (and its
// bytes; an image is then inlined for a request that names it by file_id), a vector store, a completed attachment and its chunks, a memory
// the memory plugin kept during a request; an attachment acknowledged but
// not yet ingested is ingested after the restart.
func TestServeStoredDataSurvivesKill(t *testing.T) {
	up := newUpstream(t)
	cfg, p := storageConfig(t, up.URL, "")
	data := filepath.Join(t.TempDir(), "data")
	s := startServe(t, cfg, data, p)
	fileID, storeID := s.addHandbook()
	before := s.search(storeID, question)
	s.chat("ada", "My name is Ada and I live in Lisbon.")
	memories := s.memories("ada")
	if len(memories) == 0 || !strings.Contains(fmt.Sprint(memories), "Lisbon") {
		t.Fatalf("the memory plugin kept nothing: %+v\nserve said: %s", memories, s.stderr.String())
	}

	// An image for vision requests.
	var pic bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 200, A: 255})
	if err := png.Encode(&pic, img); err != nil {
		t.Fatal(err)
	}
	var imgFile fileObject
	s.call("POST", "/api/v1/storage/files", upload(t, "red.png", "vision", pic.String()), http.StatusOK, &imgFile)

	// A second file attached just before the kill: acknowledged in
	// progress (or already completed), it must be completed after restart.
	second := "# Canteen\n\nThe canteen serves lunch from noon until two o'clock on weekdays.\n"
	var f2 fileObject
	s.call("POST", "/api/v1/storage/files", upload(t, "canteen.md", "assistants", second), http.StatusOK, &f2)
	var vs2 vectorStoreObject
	s.call("POST", "/api/v1/storage/vector-stores", map[string]any{"name": "canteen"}, http.StatusOK, &vs2)
	s.call("POST", "/api/v1/storage/vector-stores/"+vs2.ID+"/files", map[string]any{"file_id": f2.ID}, http.StatusOK, nil)
	s.kill()

	s = startServe(t, cfg, data, p)
	var f fileObject
	s.call("GET", "/api/v1/storage/files/"+fileID, nil, http.StatusOK, &f)
	if f.Filename != "handbook.md" || f.Bytes != int64(len(handbook)) {
		t.Errorf("file after kill -9: %+v", f)
	}
	resp, err := http.Get(s.mgmt + "/api/v1/storage/files/" + fileID + "/content")
	if err != nil {
		t.Fatal(err)
	}
	content, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(content) != handbook {
		t.Errorf("file content after kill -9: %d %q", resp.StatusCode, content)
	}
	var vs vectorStoreObject
	s.call("GET", "/api/v1/storage/vector-stores/"+storeID, nil, http.StatusOK, &vs)
	if vs.Name != "handbook" || vs.FileCounts.Completed != 1 {
		t.Errorf("vector store after kill -9: %+v", vs)
	}
	var vf vectorStoreFileObject
	s.call("GET", "/api/v1/storage/vector-stores/"+storeID+"/files/"+fileID, nil, http.StatusOK, &vf)
	if vf.Status != "completed" {
		t.Errorf("attached file after kill -9: %+v", vf)
	}
	if after := s.search(storeID, question); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("search after kill -9:\nbefore %+v\nafter  %+v", before, after)
	}
	if after := s.memories("ada"); fmt.Sprint(after) != fmt.Sprint(memories) {
		t.Errorf("memories after kill -9:\nbefore %+v\nafter  %+v", memories, after)
	}
	s.chat("ada", "Which city do I live in?")
	if !strings.Contains(up.last(), "Lisbon") {
		t.Errorf("the remembered fact was not injected after kill -9:\n%s", up.last())
	}
	// The image uploaded before the kill is inlined for the upstream.
	s.chat("", `[{"type":"text","text":"what colour is this?"},{"type":"input_image","file_id":"`+imgFile.ID+`"}]`)
	if want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic.Bytes()); !strings.Contains(up.last(), want) {
		t.Errorf("the image was not inlined after kill -9:\n%s", up.last())
	}
	s.call("GET", "/api/v1/storage/files/"+f2.ID, nil, http.StatusOK, nil)
	s.awaitCompleted(vs2.ID, f2.ID)
	if page := s.search(vs2.ID, "when is lunch served?"); len(page.Data) == 0 || !strings.Contains(page.Data[0].Content[0].Text, "noon") {
		t.Errorf("the file attached before kill -9 was not ingested after the restart: %+v", page)
	}
	s.stop()
}
