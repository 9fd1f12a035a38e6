package storage

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/junction-router/junction/internal/storage/vecindex"
)

func TestVectorEncodingRoundTrips(t *testing.T) {
	v := []float32{0, 1.5, -2.25, float32(math.MaxFloat32)}
	if got := DecodeVector(EncodeVector(nil, v)); !reflect.DeepEqual(got, v) {
		t.Fatalf("DecodeVector(EncodeVector(%v)) = %v", v, got)
	}
	if Finite([]float32{1, float32(math.NaN())}) || Finite([]float32{float32(math.Inf(1))}) || !Finite(v) {
		t.Fatal("Finite misjudges NaN, Inf or finite vectors")
	}
}

func TestTrimResultsKeepsScoresAboveMinAndAtMostK(t *testing.T) {
	res := []vecindex.Result{{Score: 0.9}, {Score: 0.5}, {Score: 0.7}, {Score: 0.1}}
	got := TrimResults(res, 2, true, 0.4)
	if len(got) != 2 || got[0].Score != 0.9 || got[1].Score != 0.5 {
		t.Fatalf("TrimResults = %+v", got)
	}
}

func TestBaseNameAndNewFileChecks(t *testing.T) {
	for in, want := range map[string]string{`a/b\c.txt`: "c.txt", " x ": "x", "dir/..": "", "": ""} {
		if got := BaseName(in); got != want {
			t.Errorf("BaseName(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := CheckNewFile(NewFile{Filename: "a.txt"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a file without a purpose: err = %v, want ErrInvalid", err)
	}
}

func TestMemoryHashIgnoresCaseAndSpacing(t *testing.T) {
	if MemoryHash("  Likes  TEA ") != MemoryHash("likes tea") {
		t.Fatal("MemoryHash differs for texts that normalise alike")
	}
	hits := RankMemoryHits(nil, 3)
	if hits == nil || len(hits) != 0 {
		t.Fatalf("RankMemoryHits(nil) = %#v, want an empty slice", hits)
	}
}
