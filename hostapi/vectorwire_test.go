package hostapi

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/junction-router/junction/hostapi/abi"
)

// TestVectorWireMatchesABI holds the host's one-pass embedding records to
// abi's: the same bytes written, the same arguments or error read back,
// for vectors of every small length, special floats, and every truncation
// and corruption of a record.
func TestVectorWireMatchesABI(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 70 {
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		if n > 3 {
			v[0], v[1], v[2] = float32(math.Inf(1)), float32(math.NaN()), -0
		}
		prefix := []byte{9, 8, 7}
		if got, want := appendVector(bytes.Clone(prefix), v), abi.Vector(v).Append(bytes.Clone(prefix)); !bytes.Equal(got, want) {
			t.Fatalf("vector of %d: % x, abi % x", n, got, want)
		}
		args := abi.CacheLookupArgs{Namespace: "response_cache/v2/model=m", Key: "k" + string(rune('a'+n%26)), Embedding: v, Threshold: 0.9}
		if n%7 == 0 {
			args.Embedding = nil
		}
		rec := args.Append(nil)
		cuts := [][]byte{rec}
		for i := range rec {
			cuts = append(cuts, rec[:i])
			bad := bytes.Clone(rec)
			bad[i] ^= 0xff
			cuts = append(cuts, bad)
		}
		for _, in := range cuts {
			got, gotErr := decodeCacheLookupArgs(in)
			want, wantErr := abi.DecodeCacheLookupArgs(in)
			if (gotErr == nil) != (wantErr == nil) || (wantErr == nil && !sameArgs(got, want)) {
				t.Fatalf("% x: %+v %v, abi %+v %v", in, got, gotErr, want, wantErr)
			}
		}
	}
}

// sameArgs compares bit for bit (a NaN equals itself).
func sameArgs(a, b abi.CacheLookupArgs) bool {
	bits := func(v []float32) []uint32 {
		if v == nil {
			return nil
		}
		out := make([]uint32, len(v))
		for i, f := range v {
			out[i] = math.Float32bits(f)
		}
		return out
	}
	return a.Namespace == b.Namespace && a.Key == b.Key && math.Float32bits(a.Threshold) == math.Float32bits(b.Threshold) &&
		reflect.DeepEqual(bits(a.Embedding), bits(b.Embedding))
}
