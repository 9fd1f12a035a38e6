package extproc_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/junction-router/junction/internal/extproc/envoytest"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/sqlite"
)

// TestImageFileIDInlined: behind Envoy as through the gateway, an image
// part naming an uploaded file reaches the backend as a data URL, and an
// unknown file is a 400 answered in Envoy's place.
func TestImageFileIDInlined(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	img := []byte("\x89PNG\r\n\x1a\n fake image bytes")
	f, err := st.CreateFile(ctx, storage.NewFile{Filename: "a.png", Purpose: "vision", MediaType: "image/png"}, bytes.NewReader(img), 0)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(o *envOptions) { o.opts.Files = st })
	body := `{"model":"MoM","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"input_image","file_id":"` + f.ID + `"}]}]}`
	s := e.open(envoytest.Standard)
	out, err := s.SendRequest(chat(body))
	if err != nil {
		t.Fatal(err)
	}
	if out.Immediate != nil {
		t.Fatalf("answered directly: %s", out.Immediate.GetBody())
	}
	var got struct {
		Messages []struct {
			Content []struct {
				Type     string `json:"type"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out.Upstream.Body, &got); err != nil {
		t.Fatal(err)
	}
	last := got.Messages[len(got.Messages)-1].Content
	if want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img); len(last) != 2 || last[1].Type != "image_url" || last[1].ImageURL.URL != want {
		t.Errorf("the upstream got %s", out.Upstream.Body)
	}
	_ = s.Close()

	s = e.open(envoytest.Standard)
	out, err = s.SendRequest(chat(strings.ReplaceAll(body, f.ID, "file-missing")))
	if err != nil {
		t.Fatal(err)
	}
	if out.Immediate == nil || out.Immediate.GetStatus().GetCode() != 400 || !strings.Contains(string(out.Immediate.GetBody()), `file \"file-missing\" not found`) {
		t.Errorf("unknown file: %v", out.Immediate)
	}
	_ = s.Close()
}
