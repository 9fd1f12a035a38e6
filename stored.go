package junction

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/junction-router/junction/engine"
	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/deploy"
	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/ingest"
	"github.com/junction-router/junction/internal/mgmt"
	"github.com/junction-router/junction/internal/retrieval"
	"github.com/junction-router/junction/internal/state/redisstate"
	"github.com/junction-router/junction/internal/storage"
	"github.com/junction-router/junction/internal/storage/postgres"
	"github.com/junction-router/junction/internal/storage/redismemories"
	"github.com/junction-router/junction/internal/storage/sqlite"
	"github.com/junction-router/junction/recipes"
)

// storedData is what a serving Junction keeps: the store of files, vector
// stores and memories (global.storage.backend: the embedded store in the
// data directory, or PostgreSQL shared by every replica), the embedded
// store for what stays per replica (stored responses), the embedding model
// of stored data, the ingestion pipeline and the retrieval library over
// them.
type storedData struct {
	dir          string
	backend      string
	store        storage.Store
	embedded     *sqlite.Store
	model        embedding.Model
	pipeline     *ingest.Pipeline
	library      *retrieval.Library
	maxFileBytes int64
	runtime      atomic.Pointer[engine.Runtime]    // the serving configuration, once there is one
	changed      atomic.Pointer[retrieval.Library] // the library other replicas' changes invalidate, once made
}

// dataDir is where stored data lives: the option (--data-dir), else
// global.storage.dir, else recipes.DefaultStorageDir.
func dataDir(option string, cfg *recipes.Storage) string {
	switch {
	case option != "":
		return option
	case cfg != nil && cfg.Dir != "":
		return cfg.Dir
	}
	return recipes.DefaultStorageDir
}

// openStoredData opens the store in the data directory (created 0700 on
// first use), builds the embedding model global.storage.embedding names
// (router: the signal models' embedder; deployments from deps), and starts
// ingestion, which resumes the files a previous run left in progress. The
// knowledge bases are the serving configuration's (see serve).
func openStoredData(ctx context.Context, option string, doc *recipes.Document, router signal.Embedder, deps *deploy.Set, shared *redisstate.Client, log *slog.Logger) (*storedData, error) {
	var cfg recipes.Storage
	if doc != nil && doc.Global.Storage != nil {
		cfg = *doc.Global.Storage
	}
	sd := &storedData{dir: dataDir(option, &cfg), maxFileBytes: cfg.MaxFileBytes}
	if sd.maxFileBytes <= 0 {
		sd.maxFileBytes = recipes.DefaultMaxFileBytes
	}
	if router == nil {
		router = signal.HashedEmbedder() // what the embedding signals use without a model
	}
	model, err := embedding.FromConfig(ctx, cfg.Embedding, router, deps.Embedder, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("global.storage.embedding: %w", err)
	}
	sd.model = model
	if sd.embedded, err = sqlite.Open(ctx, sd.dir, embeddedResponseOptions(doc, sqlite.Options{Logger: log})); err != nil {
		return nil, fmt.Errorf("stored data (--data-dir, global.storage.dir): %w", err)
	}
	sd.store, sd.backend = sd.embedded, recipes.StorageBackend(&cfg)
	if sd.backend == recipes.StorageBackendPostgres {
		// Another replica's change drops this one's cached results of
		// the store (the library is made below, after the store).
		onChange := func(storeID string) {
			if l := sd.changed.Load(); l != nil {
				l.Invalidate(storeID)
			}
		}
		pg, err := openPostgres(ctx, cfg.Postgres, os.Getenv, onChange, log)
		if err != nil {
			_ = sd.embedded.Close()
			return nil, err
		}
		sd.store = pg
	} else if shared != nil {
		// global.state redis: the memories every replica recalls are
		// Redis's (with postgres they are the database's already).
		sd.store = memoriesOn{Store: sd.embedded, mem: redismemories.New(shared)}
	}
	sd.library = retrieval.New(retrieval.Options{Store: sd.store, Model: model, KnowledgeBase: sd.knowledgeBase})
	sd.changed.Store(sd.library)
	concurrency := cfg.IngestConcurrency
	if concurrency <= 0 {
		concurrency = recipes.DefaultIngestConcurrency
	}
	sd.pipeline = ingest.New(ingest.Options{Store: sd.store, Model: model, Concurrency: concurrency, Logger: log, OnChange: sd.library.Invalidate})
	if err := sd.pipeline.Start(ctx); err != nil {
		sd.closeStores(log)
		return nil, fmt.Errorf("resuming ingestion in %s: %w", sd.dir, err)
	}
	log.Info("stored data", "backend", sd.backend, "dir", sd.dir, "embedding", model.Name(), "dimensions", model.Dimensions())
	return sd, nil
}

// serve makes rt's serving configuration the source of knowledge bases.
func (sd *storedData) serve(rt *engine.Runtime) { sd.runtime.Store(rt) }

// knowledgeBase finds a knowledge base of the configuration serving now.
func (sd *storedData) knowledgeBase(name string) (recipes.KnowledgeBase, bool) {
	rt := sd.runtime.Load()
	if rt == nil {
		return recipes.KnowledgeBase{}, false
	}
	return rt.Current().Document().KnowledgeBase(name)
}

// management is the management API's view of stored data.
func (sd *storedData) management() *mgmt.StorageOptions {
	return &mgmt.StorageOptions{Store: sd.store, Ingest: sd.pipeline, Library: sd.library, MaxFileBytes: sd.maxFileBytes}
}

// close stops ingestion (a file cut short stays in progress and is
// ingested again at the next start), then closes the store.
func (sd *storedData) close(log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sd.pipeline.Close(ctx); err != nil {
		log.Warn("stopping ingestion", "error", err)
	}
	sd.closeStores(log)
}

func (sd *storedData) closeStores(log *slog.Logger) {
	if sd.store != storage.Store(sd.embedded) {
		if err := sd.store.Close(); err != nil {
			log.Warn("closing the stored data", "backend", sd.backend, "error", err)
		}
	}
	if err := sd.embedded.Close(); err != nil {
		log.Warn("closing the stored data", "dir", sd.dir, "error", err)
	}
}

// openPostgres opens the postgres backend global.storage.postgres names;
// the DSN is read from the environment variable dsn_env names.
func openPostgres(ctx context.Context, cfg *recipes.StoragePostgres, getenv func(string) string, onChange func(string), log *slog.Logger) (*postgres.Store, error) {
	if cfg == nil || cfg.DSNEnv == "" {
		return nil, fmt.Errorf("global.storage.postgres.dsn_env: backend postgres needs the environment variable holding the DSN")
	}
	dsn := getenv(cfg.DSNEnv)
	if dsn == "" {
		return nil, fmt.Errorf("global.storage.postgres.dsn_env: the environment variable %s is unset or empty; set it to the PostgreSQL DSN (postgres://user@host:5432/db?search_path=schema)", cfg.DSNEnv)
	}
	conns := cfg.MaxConns
	if conns <= 0 {
		conns = recipes.DefaultPostgresMaxConns
	}
	s, err := postgres.Open(ctx, dsn, postgres.Options{MaxConns: conns, Logger: log, OnChange: onChange})
	if err != nil {
		// pgx names host, user and database in a connect error, never the
		// password a DSN may hold.
		return nil, fmt.Errorf("global.storage.postgres (DSN from %s): %w", cfg.DSNEnv, err)
	}
	return s, nil
}

// memoriesOn is the embedded store with its memories kept in mem instead
// (global.state's Redis, shared by the replicas). Close leaves the embedded
// store to closeStores.
type memoriesOn struct {
	storage.Store
	mem storage.Memories
}

func (s memoriesOn) Remember(ctx context.Context, m storage.Memory) (storage.Memory, bool, error) {
	return s.mem.Remember(ctx, m)
}

func (s memoriesOn) Recall(ctx context.Context, scope, model string, vector []float32, k int, minScore float32) ([]storage.MemoryHit, error) {
	return s.mem.Recall(ctx, scope, model, vector, k, minScore)
}

func (s memoriesOn) ListMemories(ctx context.Context, scope string, o storage.ListOptions) (storage.Page[storage.Memory], error) {
	return s.mem.ListMemories(ctx, scope, o)
}

func (s memoriesOn) GetMemory(ctx context.Context, id string) (storage.Memory, error) {
	return s.mem.GetMemory(ctx, id)
}

func (s memoriesOn) DeleteMemory(ctx context.Context, id string) error {
	return s.mem.DeleteMemory(ctx, id)
}

func (s memoriesOn) DeleteScope(ctx context.Context, scope string) (int, error) {
	return s.mem.DeleteScope(ctx, scope)
}

func (memoriesOn) Close() error { return nil }
