package abi

// Argument and answer records of the host functions. Each type has Append
// (encode) and a Decode function; the guest encodes arguments and decodes
// answers, the host the other way round.

// LogArgs: u32 level (LogDebug…LogError), str message. The host drops
// messages above its size limit and never logs request text on its own.
type LogArgs struct {
	Level   uint32
	Message string
}

// Append encodes a onto b.
func (a *LogArgs) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.U32(a.Level)
	e.Str(a.Message)
	return e.B
}

// DecodeLogArgs reads a LogArgs record.
func DecodeLogArgs(b []byte) (LogArgs, error) {
	d := Decoder{B: b}
	a := LogArgs{Level: d.U32(), Message: d.Str()}
	return a, d.Err()
}

// TextArgs: str text. The argument of embed and token_count.
type TextArgs struct{ Text string }

// Append encodes a onto b.
func (a *TextArgs) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.Str(a.Text)
	return e.B
}

// DecodeTextArgs reads a TextArgs record.
func DecodeTextArgs(b []byte) (TextArgs, error) {
	d := Decoder{B: b}
	a := TextArgs{Text: d.Str()}
	return a, d.Err()
}

// Vector (embed's answer): list of f32.
type Vector []float32

// Append encodes v onto b.
func (v Vector) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.F32s(v)
	return e.B
}

// DecodeVector reads a Vector record.
func DecodeVector(b []byte) (Vector, error) {
	d := Decoder{B: b}
	v := d.F32s()
	return v, d.Err()
}

// VectorSearchArgs: str store, u32 k, list of f32 query.
type VectorSearchArgs struct {
	Store string
	K     uint32
	Query []float32
}

// Append encodes a onto b.
func (a *VectorSearchArgs) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.Grow(12 + len(a.Store) + 4*len(a.Query))
	e.Str(a.Store)
	e.U32(a.K)
	e.F32s(a.Query)
	return e.B
}

// DecodeVectorSearchArgs reads a VectorSearchArgs record.
func DecodeVectorSearchArgs(b []byte) (VectorSearchArgs, error) {
	d := Decoder{B: b}
	a := VectorSearchArgs{Store: d.Str(), K: d.U32(), Query: d.F32s()}
	return a, d.Err()
}

// VectorHit is one search result: the stored item's id, its cosine
// similarity to the query and its payload (the stored text or document).
type VectorHit struct {
	ID      string
	Score   float32
	Payload []byte
}

// VectorHits (vector_search's answer): list of {str id, f32 score, bytes
// payload}, best first.
type VectorHits []VectorHit

// Append encodes h onto b.
func (h VectorHits) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.U32(uint32(len(h)))
	for _, x := range h {
		e.Str(x.ID)
		e.F32(x.Score)
		e.Bytes(x.Payload)
	}
	return e.B
}

// DecodeVectorHits reads a VectorHits record.
func DecodeVectorHits(b []byte) (VectorHits, error) {
	d := Decoder{B: b}
	n := d.Count(12)
	h := make(VectorHits, n)
	for i := range h {
		h[i] = VectorHit{ID: d.Str(), Score: d.F32(), Payload: d.Bytes()}
	}
	return h, d.Err()
}

// CacheLookupArgs: str namespace, str key, list of f32 embedding, f32
// threshold. The exact key is tried first; when it misses and an embedding is
// given, the entry of the namespace whose stored embedding is most similar
// (cosine) is returned if its similarity is at least threshold.
type CacheLookupArgs struct {
	Namespace string
	Key       string
	Embedding []float32
	Threshold float32
}

// Append encodes a onto b.
func (a *CacheLookupArgs) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.Grow(16 + len(a.Namespace) + len(a.Key) + 4*len(a.Embedding))
	e.Str(a.Namespace)
	e.Str(a.Key)
	e.F32s(a.Embedding)
	e.F32(a.Threshold)
	return e.B
}

// DecodeCacheLookupArgs reads a CacheLookupArgs record.
func DecodeCacheLookupArgs(b []byte) (CacheLookupArgs, error) {
	d := Decoder{B: b}
	a := CacheLookupArgs{Namespace: d.Str(), Key: d.Str(), Embedding: d.F32s(), Threshold: d.F32()}
	return a, d.Err()
}

// CacheEntry (cache_lookup's answer): f32 similarity (1 for an exact key),
// bytes value.
type CacheEntry struct {
	Similarity float32
	Value      []byte
}

// Append encodes c onto b.
func (c *CacheEntry) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.F32(c.Similarity)
	e.Bytes(c.Value)
	return e.B
}

// DecodeCacheEntry reads a CacheEntry record.
func DecodeCacheEntry(b []byte) (CacheEntry, error) {
	d := Decoder{B: b}
	c := CacheEntry{Similarity: d.F32(), Value: d.Bytes()}
	return c, d.Err()
}

// CacheStoreArgs: str namespace, str key, bytes value, u32 ttl_seconds (0:
// the host's default), list of f32 embedding (may be empty; given, the entry
// can be found by similarity).
type CacheStoreArgs struct {
	Namespace  string
	Key        string
	Value      []byte
	TTLSeconds uint32
	Embedding  []float32
}

// Append encodes a onto b.
func (a *CacheStoreArgs) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.Grow(20 + len(a.Namespace) + len(a.Key) + len(a.Value) + 4*len(a.Embedding))
	e.Str(a.Namespace)
	e.Str(a.Key)
	e.Bytes(a.Value)
	e.U32(a.TTLSeconds)
	e.F32s(a.Embedding)
	return e.B
}

// DecodeCacheStoreArgs reads a CacheStoreArgs record.
func DecodeCacheStoreArgs(b []byte) (CacheStoreArgs, error) {
	d := Decoder{B: b}
	a := CacheStoreArgs{Namespace: d.Str(), Key: d.Str(), Value: d.Bytes(), TTLSeconds: d.U32(), Embedding: d.F32s()}
	return a, d.Err()
}

// ClassifyArgs: str binding (a classifier the host names, e.g. "domain",
// "jailbreak"), str text.
type ClassifyArgs struct {
	Binding string
	Text    string
}

// Append encodes a onto b.
func (a *ClassifyArgs) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.Str(a.Binding)
	e.Str(a.Text)
	return e.B
}

// DecodeClassifyArgs reads a ClassifyArgs record.
func DecodeClassifyArgs(b []byte) (ClassifyArgs, error) {
	d := Decoder{B: b}
	a := ClassifyArgs{Binding: d.Str(), Text: d.Str()}
	return a, d.Err()
}

// Class is one label with its score.
type Class struct {
	Label string
	Score float32
}

// Classes (classify's answer): list of {str label, f32 score}, best first.
type Classes []Class

// Append encodes c onto b.
func (c Classes) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.U32(uint32(len(c)))
	for _, x := range c {
		e.Str(x.Label)
		e.F32(x.Score)
	}
	return e.B
}

// DecodeClasses reads a Classes record.
func DecodeClasses(b []byte) (Classes, error) {
	d := Decoder{B: b}
	n := d.Count(8)
	c := make(Classes, n)
	for i := range c {
		c[i] = Class{Label: d.Str(), Score: d.F32()}
	}
	return c, d.Err()
}

// RetrieveArgs (revision 2): str source (a vector store's id or name, or a
// knowledge base's name), str query, u32 k (0: the source's default), f32
// min_score, u8 has_min_score (0: the source's own min_score applies), str
// filter (an OpenAI-style attribute filter as JSON; "" for none). The answer
// is VectorHits whose payloads are JSON {"text", "source", "file_id",
// "vector_store_id", "chunk_index", "attributes"}.
type RetrieveArgs struct {
	Source      string
	Query       string
	K           uint32
	MinScore    float32
	HasMinScore bool
	Filter      string
}

// Append encodes a onto b.
func (a *RetrieveArgs) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.Str(a.Source)
	e.Str(a.Query)
	e.U32(a.K)
	e.F32(a.MinScore)
	var has uint8
	if a.HasMinScore {
		has = 1
	}
	e.U8(has)
	e.Str(a.Filter)
	return e.B
}

// DecodeRetrieveArgs reads a RetrieveArgs record.
func DecodeRetrieveArgs(b []byte) (RetrieveArgs, error) {
	d := Decoder{B: b}
	a := RetrieveArgs{Source: d.Str(), Query: d.Str(), K: d.U32(), MinScore: d.F32()}
	a.HasMinScore = d.U8() != 0
	a.Filter = d.Str()
	return a, d.Err()
}

// MemoryRecallArgs (revision 2): str scope, str query, u32 k, f32
// min_score. The answer is VectorHits whose payloads are JSON {"id", "text",
// "created_at"}.
type MemoryRecallArgs struct {
	Scope    string
	Query    string
	K        uint32
	MinScore float32
}

// Append encodes a onto b.
func (a *MemoryRecallArgs) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.Str(a.Scope)
	e.Str(a.Query)
	e.U32(a.K)
	e.F32(a.MinScore)
	return e.B
}

// DecodeMemoryRecallArgs reads a MemoryRecallArgs record.
func DecodeMemoryRecallArgs(b []byte) (MemoryRecallArgs, error) {
	d := Decoder{B: b}
	a := MemoryRecallArgs{Scope: d.Str(), Query: d.Str(), K: d.U32(), MinScore: d.F32()}
	return a, d.Err()
}

// MemoryRememberArgs (revision 2): str scope, str text.
type MemoryRememberArgs struct {
	Scope string
	Text  string
}

// Append encodes a onto b.
func (a *MemoryRememberArgs) Append(b []byte) []byte {
	e := Encoder{B: b}
	e.Str(a.Scope)
	e.Str(a.Text)
	return e.B
}

// DecodeMemoryRememberArgs reads a MemoryRememberArgs record.
func DecodeMemoryRememberArgs(b []byte) (MemoryRememberArgs, error) {
	d := Decoder{B: b}
	a := MemoryRememberArgs{Scope: d.Str(), Text: d.Str()}
	return a, d.Err()
}
