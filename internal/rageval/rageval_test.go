package rageval

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/deploy"
	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/ingest"
	"github.com/junction-router/junction/internal/retrieval"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/sqlite"
)

type question struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

func loadQuestions(t *testing.T) []question {
	t.Helper()
	f, err := os.Open("testdata/questions.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var qs []question
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q question
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatalf("questions.jsonl: %v", err)
		}
		qs = append(qs, q)
	}
	return qs
}

// score is the quality of one embedder and chunking over the labelled set.
type score struct {
	r1, r5, mrr float64
	chunks      int
	misses      []string
}

// measure ingests the handbook with emb and chunking and scores each
// ranking (retrieval.RankingHybrid, retrieval.RankingDense) over the same
// store.
func measure(t *testing.T, emb signal.Embedder, chunking storage.Chunking, rankings ...string) []score {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := sqlite.Open(ctx, t.TempDir(), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	model, err := embedding.FromConfig(ctx, nil, emb, nil, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := st.CreateVectorStore(ctx, storage.NewVectorStore{Name: "handbook", EmbeddingModel: model.Name(), Dimensions: model.Dimensions()})
	if err != nil {
		t.Fatal(err)
	}
	pipe := ingest.New(ingest.Options{Store: st, Model: model, Concurrency: 2})
	if err := pipe.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer pipe.Close(ctx)
	docs, _ := filepath.Glob("testdata/*.md")
	for _, path := range docs {
		mediaType, err := ingest.Accept(filepath.Base(path), "assistants")
		if err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := st.CreateFile(ctx, storage.NewFile{Filename: filepath.Base(path), Purpose: "assistants", MediaType: mediaType}, fh, 1<<20)
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.AttachFile(ctx, vs.ID, f.ID, nil, chunking); err != nil {
			t.Fatal(err)
		}
		pipe.Submit(vs.ID, f.ID)
	}
	if err := pipe.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetVectorStore(ctx, vs.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.FileCounts.Completed != len(docs) {
		t.Fatalf("ingestion: %+v, want %d completed", got.FileCounts, len(docs))
	}
	var chunks int
	_ = st.ScanChunks(ctx, []string{vs.ID}, func(storage.Hit, []float32) error { chunks++; return nil })
	qs := loadQuestions(t)
	out := make([]score, len(rankings))
	for i, ranking := range rankings {
		lib := retrieval.New(retrieval.Options{Store: st, Model: model, Ranking: ranking})
		out[i] = rank(ctx, t, lib, qs)
		out[i].chunks = chunks
	}
	return out
}

// rank scores one library over the questions.
func rank(ctx context.Context, t *testing.T, lib *retrieval.Library, qs []question) score {
	t.Helper()
	var s score
	for _, q := range qs {
		res, err := lib.Search(ctx, retrieval.Query{Source: "handbook", Text: q.Question, K: 5, Fresh: true})
		if err != nil {
			t.Fatal(err)
		}
		rank := 0
		for i, h := range res.Hits {
			if strings.Contains(h.Text, q.Answer) {
				rank = i + 1
				break
			}
		}
		switch {
		case rank == 1:
			s.r1++
			s.r5++
		case rank > 1:
			s.r5++
		default:
			s.misses = append(s.misses, q.Question)
		}
		if rank > 0 {
			s.mrr += 1 / float64(rank)
		}
	}
	n := float64(len(qs))
	s.r1, s.r5, s.mrr = s.r1/n, s.r5/n, s.mrr/n
	return s
}

// TestRetrievalQuality reports recall@1, recall@5 and MRR of the labelled
// handbook set with the router's default embedder (the ONNX GloVe model)
// and the lexical fallback (hashed n-grams), each ranked hybrid (the
// default: BM25 fused with the vectors) and dense (vectors alone), and
// holds the hybrid numbers to floors a regression would break (the dense
// ones are reported for comparison).
func TestRetrievalQuality(t *testing.T) {
	ctx := context.Background()
	models, closeModels, err := deploy.LocalModels(ctx, deploy.ModelsONNX, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer closeModels()
	type run struct {
		name     string
		emb      signal.Embedder
		chunking storage.Chunking
		// floor1 and floor5 are the hybrid recall@1 and recall@5 one
		// question (0.025) under what was measured (docs/benchmarks.md).
		floor1, floor5 float64
	}
	runs := []run{
		{"hashed-ngrams (lexical fallback)", signal.HashedEmbedder(), storage.Chunking{MaxTokens: 100, OverlapTokens: 20}, 0.675, 0.875},
	}
	if models.Embedder != nil {
		runs = append(runs,
			run{"onnx glove (default)", models.Embedder, storage.Chunking{MaxTokens: 100, OverlapTokens: 20}, 0.65, 0.875},
			run{"onnx glove (default)", models.Embedder, storage.Chunking{MaxTokens: 200, OverlapTokens: 50}, 0.725, 0.875},
		)
	} else if os.Getenv("JUNCTION_REQUIRE_ORT") != "" {
		t.Fatal("JUNCTION_REQUIRE_ORT is set but the ONNX models did not load")
	}
	for _, r := range runs {
		scores := measure(t, r.emb, r.chunking, retrieval.RankingHybrid, retrieval.RankingDense)
		for i, ranking := range []string{retrieval.RankingHybrid, retrieval.RankingDense} {
			s := scores[i]
			t.Logf("%-32s %-6s %d/%d tokens  chunks %3d  recall@1 %.3f  recall@5 %.3f  MRR %.3f",
				r.name, ranking, r.chunking.MaxTokens, r.chunking.OverlapTokens, s.chunks, s.r1, s.r5, s.mrr)
			for _, m := range s.misses {
				t.Logf("    not in top 5: %s", m)
			}
		}
		h := scores[0]
		const eps = 1e-9 // the recalls are multiples of 1/40
		if h.r1 < r.floor1-eps || h.r5 < r.floor5-eps {
			t.Errorf("%s %d/%d hybrid: recall@1 %.3f, recall@5 %.3f; floors %.2f, %.2f",
				r.name, r.chunking.MaxTokens, r.chunking.OverlapTokens, h.r1, h.r5, r.floor1, r.floor5)
		}
	}
}
