package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/junction-router/junction/internal/embedding"
	"github.com/junction-router/junction/internal/storage"
)

// Failure codes of a vector-store file (OpenAI's last_error codes).
const (
	CodeUnsupportedFile = "unsupported_file"
	CodeInvalidFile     = "invalid_file"
	CodeEmbeddingError  = "embedding_error"
	CodeServerError     = "server_error"
)

// embedBatch is how many chunks go to the model in one Embed call (the
// model splits further as it needs).
const embedBatch = 64

// maxReason bounds a failure message kept in the store.
const maxReason = 1000

// Options configure a Pipeline.
type Options struct {
	// Store keeps the files, their status and their chunks.
	Store storage.Store
	// Model embeds the chunks; a vector store built with another model (or
	// dimension) gets its files failed with a reason saying so.
	Model embedding.Model
	// Concurrency is how many files are ingested at once (default 2).
	Concurrency int
	// Logger receives one line per file ingested or failed (ids, counts and
	// reasons; never the file's text); nil discards.
	Logger *slog.Logger
	// OnChange is called with the vector store's id after each of its files
	// completed or failed (a retrieval cache drops what it kept of it).
	OnChange func(storeID string)
}

type job struct{ store, file string }

// Pipeline ingests vector-store files in the background: Submit queues a
// file (never blocking; a file queued twice is ingested once), Concurrency
// workers each open, extract, chunk and embed one file, then store all its
// chunks in one transaction (CompleteFile) or mark it failed (FailFile) with
// a code and a reason. A file detached or deleted meanwhile is dropped
// quietly. Start resumes what a previous run left in progress; Close stops
// the workers (the files they held stay in progress, for the next Start).
type Pipeline struct {
	o   Options
	log *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []job
	waiting map[job]bool  // in queue
	running map[job]bool  // being ingested; true: submitted again meanwhile
	idle    chan struct{} // closed while nothing is queued or running
	started bool
	closed  bool
}

// New returns a pipeline; it ingests nothing until Start.
func New(o Options) *Pipeline {
	if o.Concurrency <= 0 {
		o.Concurrency = 2
	}
	p := &Pipeline{o: o, log: o.Logger, waiting: map[job]bool{}, running: map[job]bool{}, idle: make(chan struct{})}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	close(p.idle)
	p.cond = sync.NewCond(&p.mu)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	return p
}

// Start starts the workers and queues every file the store still has in
// progress (a restart resumes them). It fails when the store cannot list
// them; the workers run until Close either way.
func (p *Pipeline) Start(ctx context.Context) error {
	if p.o.Store == nil || p.o.Model == nil {
		return errors.New("ingest: the pipeline needs a store and an embedding model")
	}
	p.mu.Lock()
	if p.started || p.closed {
		p.mu.Unlock()
		return errors.New("ingest: the pipeline was started or closed already")
	}
	p.started = true
	for range p.o.Concurrency {
		p.wg.Add(1)
		go p.worker()
	}
	p.mu.Unlock()
	pending, err := p.o.Store.PendingFiles(ctx)
	if err != nil {
		return fmt.Errorf("ingest: listing the files left in progress: %w", err)
	}
	for _, f := range pending {
		p.Submit(f.VectorStoreID, f.FileID)
	}
	if len(pending) > 0 {
		p.log.Info("resuming ingestion", "files", len(pending))
	}
	return nil
}

// Submit queues a vector-store file for ingestion. It never blocks; a file
// already queued is not queued twice, and one being ingested is looked at
// again once that ends.
func (p *Pipeline) Submit(storeID, fileID string) {
	j := job{storeID, fileID}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.waiting[j] {
		return
	}
	if _, ok := p.running[j]; ok {
		p.running[j] = true
		return
	}
	p.push(j)
}

// push queues j; p.mu is held.
func (p *Pipeline) push(j job) {
	select {
	case <-p.idle: // idle until now: Idle callers from here on wait
		p.idle = make(chan struct{})
	default:
	}
	p.queue = append(p.queue, j)
	p.waiting[j] = true
	p.cond.Signal()
}

// maybeIdle closes the idle channel once nothing is queued or running;
// p.mu is held.
func (p *Pipeline) maybeIdle() {
	if len(p.queue) > 0 || len(p.running) > 0 {
		return
	}
	select {
	case <-p.idle:
	default:
		close(p.idle)
	}
}

// Idle waits until nothing is queued or being ingested (or ctx ends).
func (p *Pipeline) Idle(ctx context.Context) error {
	p.mu.Lock()
	ch := p.idle
	p.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the workers, cancelling the files they are ingesting (those
// stay in progress and are resumed by the next Start), and waits for them
// until ctx ends.
func (p *Pipeline) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.queue, p.waiting = nil, map[job]bool{}
	p.maybeIdle()
	p.cancel()
	p.cond.Broadcast()
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("ingest: closing: %w", ctx.Err())
	}
}

func (p *Pipeline) worker() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		for len(p.queue) == 0 && !p.closed {
			p.cond.Wait()
		}
		if p.closed {
			p.mu.Unlock()
			return
		}
		j := p.queue[0]
		p.queue[0] = job{}
		p.queue = p.queue[1:]
		delete(p.waiting, j)
		p.running[j] = false
		p.mu.Unlock()

		p.ingest(p.ctx, j)

		p.mu.Lock()
		again := p.running[j]
		delete(p.running, j)
		if again && !p.closed && !p.waiting[j] {
			p.push(j)
		}
		p.maybeIdle()
		p.mu.Unlock()
	}
}

// failure is why a file failed: a code and a reason for the client.
type failure struct {
	code, reason string
}

// ingest ingests one file and records the outcome.
func (p *Pipeline) ingest(ctx context.Context, j job) {
	start := time.Now()
	chunks, f := p.chunks(ctx, j)
	if ctx.Err() != nil {
		return // closing: the file stays in progress for the next Start
	}
	st := p.o.Store
	if f == nil {
		if chunks == nil {
			return // dropped
		}
		err := st.CompleteFile(ctx, j.store, j.file, chunks)
		switch {
		case err == nil:
			p.log.Info("file ingested", "vector_store_id", j.store, "file_id", j.file, "chunks", len(chunks),
				"duration_ms", time.Since(start).Milliseconds())
			p.changed(j.store)
			return
		case ctx.Err() != nil:
			return
		case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrConflict):
			return // detached, deleted or no longer in progress meanwhile
		case errors.Is(err, storage.ErrDimension):
			f = &failure{CodeEmbeddingError, fmt.Sprintf("the embedding model %s gave vectors the vector store cannot take: %v", p.o.Model.Name(), err)}
		default:
			p.log.Error("storing a file's chunks failed", "vector_store_id", j.store, "file_id", j.file, "error", err.Error())
			f = &failure{CodeServerError, "storing the file's chunks failed; attach the file again"}
		}
	}
	reason := clip(f.reason, maxReason)
	if err := st.FailFile(ctx, j.store, j.file, f.code, reason); err != nil {
		if !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) && ctx.Err() == nil {
			p.log.Error("marking a file failed failed", "vector_store_id", j.store, "file_id", j.file, "error", err.Error())
		}
		return
	}
	p.log.Warn("file ingestion failed", "vector_store_id", j.store, "file_id", j.file, "code", f.code, "reason", reason)
	p.changed(j.store)
}

func (p *Pipeline) changed(storeID string) {
	if p.o.OnChange != nil {
		p.o.OnChange(storeID)
	}
}

// chunks reads, extracts, chunks and embeds a file. It returns the chunks,
// or a failure, or neither when the file is to be dropped (no longer in
// progress, detached, deleted, or ctx ended).
func (p *Pipeline) chunks(ctx context.Context, j job) ([]storage.Chunk, *failure) {
	st, m := p.o.Store, p.o.Model
	vf, err := st.GetVectorStoreFile(ctx, j.store, j.file)
	if err != nil {
		return nil, p.lookupFailed(ctx, j, "reading the file's status", err)
	}
	if vf.Status != storage.StatusInProgress {
		return nil, nil // done already (a duplicate submission)
	}
	vs, err := st.GetVectorStore(ctx, j.store)
	if err != nil {
		return nil, p.lookupFailed(ctx, j, "reading the vector store", err)
	}
	if (vs.EmbeddingModel != "" && vs.EmbeddingModel != m.Name()) || (vs.Dimensions != 0 && vs.Dimensions != m.Dimensions()) {
		return nil, &failure{CodeEmbeddingError, fmt.Sprintf(
			"the vector store was built with embedding model %s (%d dimensions) but this server embeds with %s (%d dimensions); "+
				"create a new vector store for this model, or configure global.storage.embedding to the store's model",
			vs.EmbeddingModel, vs.Dimensions, m.Name(), m.Dimensions())}
	}
	rc, file, err := st.OpenFile(ctx, j.file)
	if err != nil {
		return nil, p.lookupFailed(ctx, j, "opening the file", err)
	}
	defer rc.Close()
	mt := file.MediaType
	if mt == "" {
		if mt, err = Accept(file.Filename, file.Purpose); err != nil {
			return nil, &failure{CodeUnsupportedFile, err.Error()}
		}
	}
	if IsImage(mt) {
		return nil, &failure{CodeUnsupportedFile, fmt.Sprintf("%s is an image (%s): images are kept for vision requests; only documents (.txt, .md, .json, .csv, .html) are ingested", file.Filename, mt)}
	}
	text, err := Extract(mt, rc)
	switch {
	case err == nil:
	case errors.Is(err, ErrUnsupported):
		return nil, &failure{CodeUnsupportedFile, err.Error()}
	case errors.Is(err, ErrInvalid):
		return nil, &failure{CodeInvalidFile, err.Error()}
	case ctx.Err() != nil:
		return nil, nil
	default:
		p.log.Error("reading a file failed", "file_id", j.file, "error", err.Error())
		return nil, &failure{CodeServerError, "reading the file's bytes failed; attach the file again"}
	}
	rc.Close()
	pieces := Chunk(text, vf.Chunking)
	if len(pieces) == 0 {
		return nil, &failure{CodeInvalidFile, "the document has no text"}
	}
	chunks := make([]storage.Chunk, len(pieces))
	texts := make([]string, 0, embedBatch)
	for start := 0; start < len(pieces); start += embedBatch {
		texts = texts[:0]
		for _, pc := range pieces[start:min(start+embedBatch, len(pieces))] {
			texts = append(texts, pc.Text)
		}
		vecs, err := m.Embed(ctx, texts)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil
			}
			return nil, &failure{CodeEmbeddingError, fmt.Sprintf("embedding chunks %d–%d of %d failed: %v", start, start+len(texts)-1, len(pieces), err)}
		}
		if len(vecs) != len(texts) {
			return nil, &failure{CodeEmbeddingError, fmt.Sprintf("the embedding model %s gave %d vectors for %d chunks", m.Name(), len(vecs), len(texts))}
		}
		for i, v := range vecs {
			k := start + i
			chunks[k] = storage.Chunk{Index: k, Text: pieces[k].Text, Tokens: pieces[k].Tokens, Vector: v}
		}
	}
	return chunks, nil
}

// lookupFailed handles a store error before ingestion: not found means the
// file was detached or deleted (drop it); a cancelled ctx drops it too;
// anything else fails the file.
func (p *Pipeline) lookupFailed(ctx context.Context, j job, what string, err error) *failure {
	if errors.Is(err, storage.ErrNotFound) || ctx.Err() != nil {
		return nil
	}
	p.log.Error("ingestion: "+what+" failed", "vector_store_id", j.store, "file_id", j.file, "error", err.Error())
	return &failure{CodeServerError, what + " failed; attach the file again"}
}

// clip shortens s to at most n bytes, not inside a UTF-8 character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
