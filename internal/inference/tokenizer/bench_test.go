package tokenizer_test

import (
	"strings"
	"testing"
)

// BenchmarkTokens measures tokenising about 1,000 words of English-like text with each fixture tokenizer.
func BenchmarkTokens(b *testing.B) {
	text := strings.Repeat("Hello, y'all! How are you playing the unaffable café game today? ", 80)
	for _, name := range []string{"bert-uncased.json", "roberta-bpe.json", "wordlevel.json", "unigram.json"} {
		tk := loadB(b, name)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				tk.Tokens(text, -1)
			}
		})
	}
}
