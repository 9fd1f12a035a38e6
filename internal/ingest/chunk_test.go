package ingest

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/junction-router/junction/engine/signal"
	"github.com/junction-router/junction/internal/storage"
)

func TestCheckChunking(t *testing.T) {
	for _, c := range []storage.Chunking{{}, {MaxTokens: 100}, {MaxTokens: 100, OverlapTokens: 50}, {MaxTokens: 4096, OverlapTokens: 2048}, {MaxTokens: 800, OverlapTokens: 0}} {
		if err := CheckChunking(c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for c, want := range map[storage.Chunking]string{
		{MaxTokens: 99}:                      "max_chunk_size_tokens must be between 100 and 4096 (got 99)",
		{MaxTokens: 5000, OverlapTokens: 1}:  "max_chunk_size_tokens",
		{MaxTokens: 100, OverlapTokens: 51}:  "chunk_overlap_tokens must be between 0 and half of max_chunk_size_tokens, 50 (got 51)",
		{MaxTokens: 800, OverlapTokens: -1}:  "chunk_overlap_tokens",
		{MaxTokens: -800, OverlapTokens: 10}: "max_chunk_size_tokens",
	} {
		if err := CheckChunking(c); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", c, err, want)
		}
	}
	if c := WithDefaults(storage.Chunking{}); c.MaxTokens != 800 || c.OverlapTokens != 400 {
		t.Errorf("defaults %+v", c)
	}
}

// checkPieces holds every piece to the limits and the text: each piece is a
// part of the text, none is over max, and their overlap repeats the tail
// of the piece before.
func checkPieces(t *testing.T, text string, c storage.Chunking, pieces []Piece) {
	t.Helper()
	if len(pieces) == 0 {
		t.Fatal("no pieces")
	}
	pos := 0
	for i, p := range pieces {
		if p.Tokens != signal.EstimateTokens(p.Text) {
			t.Errorf("piece %d: Tokens %d, router counts %d", i, p.Tokens, signal.EstimateTokens(p.Text))
		}
		if p.Tokens > c.MaxTokens {
			t.Errorf("piece %d has %d tokens, max %d", i, p.Tokens, c.MaxTokens)
		}
		if !utf8.ValidString(p.Text) || p.Text != strings.TrimSpace(p.Text) || p.Text == "" {
			t.Errorf("piece %d is not valid trimmed UTF-8 text: %q", i, short(p.Text))
		}
		at := strings.Index(text[max(pos-len(p.Text), 0):], p.Text)
		if at < 0 {
			t.Fatalf("piece %d is not in the text in order: %q", i, short(p.Text))
		}
		at += max(pos-len(p.Text), 0)
		if at > pos {
			if strings.TrimSpace(text[pos:at]) != "" {
				t.Errorf("piece %d skips text %q", i, short(text[pos:at]))
			}
		}
		pos = at + len(p.Text)
	}
	if strings.TrimSpace(text[pos:]) != "" {
		t.Errorf("the pieces leave out the end %q", short(text[pos:]))
	}
}

// overlapTokens is the tokens of the longest tail of prev, from a word
// start, that cur starts with.
func overlapTokens(prev, cur string) int {
	for i := 0; i < len(prev); i++ {
		if (i == 0 || prev[i-1] == ' ' || prev[i-1] == '\n') && strings.HasPrefix(cur, prev[i:]) {
			return signal.EstimateTokens(prev[i:])
		}
	}
	return 0
}

// short shortens a text for a failure message.
func short(s string) string {
	if len(s) > 80 {
		return s[:40] + "…" + s[len(s)-40:]
	}
	return s
}

func words(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "word%d", i)
		if i%12 == 11 {
			b.WriteString(".")
		}
		if i%60 == 59 {
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestChunkLimitsAndOverlap(t *testing.T) {
	text := words(3000)
	for _, c := range []storage.Chunking{{MaxTokens: 100, OverlapTokens: 0}, {MaxTokens: 100, OverlapTokens: 50}, {MaxTokens: 800, OverlapTokens: 400}, {MaxTokens: 4096, OverlapTokens: 1000}} {
		t.Run(fmt.Sprintf("%d-%d", c.MaxTokens, c.OverlapTokens), func(t *testing.T) {
			pieces := Chunk(text, c)
			checkPieces(t, text, c, pieces)
			for i := 1; i < len(pieces); i++ {
				prev, cur := pieces[i-1].Text, pieces[i].Text
				// The overlap: the start of cur is a tail of prev (whole words).
				shared := overlapTokens(prev, cur)
				if c.OverlapTokens == 0 && shared != 0 {
					t.Errorf("piece %d repeats %d tokens with no overlap asked", i, shared)
				}
				if shared > c.OverlapTokens {
					t.Errorf("piece %d repeats %d tokens, overlap %d", i, shared, c.OverlapTokens)
				}
				if c.OverlapTokens > 0 && i < len(pieces)-1 && shared < min(c.OverlapTokens, pieces[i-1].Tokens/2)/2-20 {
					t.Errorf("piece %d repeats only %d tokens of the %d asked", i, shared, c.OverlapTokens)
				}
			}
			if c.MaxTokens < 1000 && len(pieces) < 3 {
				t.Errorf("%d pieces", len(pieces))
			}
		})
	}
}

func TestChunkBoundaries(t *testing.T) {
	// Paragraphs of about 60 tokens: pieces of 100 end at paragraph ends.
	var paras []string
	for i := range 20 {
		paras = append(paras, fmt.Sprintf("Paragraph %d begins here. ", i)+strings.Repeat("Some filler words go on. ", 10)+fmt.Sprintf("End of paragraph %d.", i))
	}
	text := strings.Join(paras, "\n\n")
	c := storage.Chunking{MaxTokens: 150, OverlapTokens: 0}
	pieces := Chunk(text, c)
	checkPieces(t, text, c, pieces)
	for i, p := range pieces {
		if !strings.HasPrefix(p.Text, "Paragraph ") || !strings.HasSuffix(p.Text, ".") {
			t.Errorf("piece %d does not run from a paragraph start to a paragraph end: %q", i, p.Text)
		}
	}
	// Without paragraphs, pieces end at sentence ends.
	text = ""
	for i := range 80 {
		text += fmt.Sprintf("The quick brown fox %d jumps over the lazy dog again. ", i)
	}
	pieces = Chunk(text, storage.Chunking{MaxTokens: 100, OverlapTokens: 30})
	checkPieces(t, text, storage.Chunking{MaxTokens: 100, OverlapTokens: 30}, pieces)
	for i, p := range pieces {
		if !strings.HasSuffix(p.Text, "again.") {
			t.Errorf("piece %d does not end a sentence: %q", i, p.Text[max(0, len(p.Text)-30):])
		}
		if i > 0 && !strings.HasPrefix(p.Text, "The quick") {
			t.Errorf("piece %d's overlap does not start a sentence: %q", i, p.Text[:30])
		}
	}
}

func TestChunkUnspacedText(t *testing.T) {
	// Japanese without spaces: one token a character; cut between characters.
	text := ""
	for i := range 200 {
		text += fmt.Sprintf("日本語のテキスト%dは空白なしで書かれる。", i)
	}
	c := storage.Chunking{MaxTokens: 100, OverlapTokens: 20}
	pieces := Chunk(text, c)
	checkPieces(t, text, c, pieces)
	if len(pieces) < 30 {
		t.Errorf("%d pieces", len(pieces))
	}
	// One very long token (base64-like) among words.
	text = "start "
	for i := range 5000 {
		text += fmt.Sprintf("QUJD%04d", i)
	}
	text += " end é"
	pieces = Chunk(text, c)
	checkPieces(t, text, c, pieces)
	// Emoji and combining marks never split.
	text = ""
	for i := range 2000 {
		text += fmt.Sprintf("👩‍👩‍👧e\u0301%d", i)
	}
	pieces = Chunk(text, c)
	checkPieces(t, text, c, pieces)
}

func TestChunkSmallAndEmpty(t *testing.T) {
	if p := Chunk("", storage.Chunking{}); len(p) != 0 {
		t.Errorf("empty: %v", p)
	}
	if p := Chunk("  \n\n ", storage.Chunking{}); len(p) != 0 {
		t.Errorf("blank: %v", p)
	}
	p := Chunk("  Just one line.  \n", storage.Chunking{})
	if len(p) != 1 || p[0].Text != "Just one line." || p[0].Tokens != signal.EstimateTokens("Just one line.") {
		t.Errorf("one line: %+v", p)
	}
	// An out-of-range chunking is clamped, not trusted.
	text := words(2000)
	p = Chunk(text, storage.Chunking{MaxTokens: 5, OverlapTokens: 100})
	checkPieces(t, text, storage.Chunking{MaxTokens: 100}, p)
}

func TestChunkLinear(t *testing.T) {
	text := strings.Repeat(words(1000)+"\n\n", 200) // about 1.2 MB
	start := time.Now()
	pieces := Chunk(text, storage.Chunking{})
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("chunking %d bytes took %v", len(text), d)
	}
	checkPieces(t, text, storage.Chunking{MaxTokens: 800, OverlapTokens: 400}, pieces)
}

// BenchmarkChunk cuts about 1 MB of prose into the default 800/400 chunks.
func BenchmarkChunk(b *testing.B) {
	text := strings.Repeat(words(1000)+"\n\n", 150)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Chunk(text, storage.Chunking{})
	}
}
