package lexical

import (
	"bytes"
	"embed"
	"fmt"
)

// The files are written by cmd/junction-train-lexical from ../shared/data.
//
//go:embed models/domain.json.gz models/jailbreak.json.gz
var modelFiles embed.FS

// Domain decodes the embedded domain classifier: the 14 MMLU-Pro categories.
// Each call decodes anew (tens of milliseconds); callers keep the result.
func Domain() (*NaiveBayes, error) { return embedded("models/domain.json.gz") }

// Jailbreak decodes the embedded jailbreak classifier, labels "benign" and
// "jailbreak". Each call decodes anew; callers keep the result.
func Jailbreak() (*NaiveBayes, error) { return embedded("models/jailbreak.json.gz") }

func embedded(name string) (*NaiveBayes, error) {
	b, err := modelFiles.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("lexical: %w", err)
	}
	m, err := Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("lexical: %s: %w", name, err)
	}
	return m.Build()
}
