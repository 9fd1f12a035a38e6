package recipes

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
)

// Two hashes identify a configuration:
//
//   - HashSource (and the canonical bytes ParseSource and LoadFile return) hash
//     the document as written, before defaults: the persisted document's
//     identity (source_config_hash, the ETag).
//   - Hash hashes a *Document as it stands; for a document from Parse that is
//     after defaults, i.e. the effective configuration the engine runs
//     (generated_runtime_hash). Two sources that differ only in spelling out a
//     default have different source hashes and the same effective hash.
//
// Both hash canonical JSON: object keys sorted (by bytes), no insignificant
// whitespace, numbers in shortest round-trip form (1.0, 1e0 and 1 are the same
// number), strings escaped as encoding/json does without HTML escaping. The same
// document written in YAML or JSON, in any key order and with any whitespace,
// therefore hashes the same. Hashes are "sha256:" followed by 64 hex digits.

// HashPrefix starts every hash this package returns.
const HashPrefix = "sha256:"

// HashBytes returns the hash of already-canonical bytes.
func HashBytes(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return HashPrefix + hex.EncodeToString(sum[:])
}

// HashSource returns the hash of a YAML or JSON document as written (before
// defaults). It does not validate the document beyond its syntax; errors are
// *ValidationError.
func HashSource(data []byte) (string, error) {
	canon, err := CanonicalSource(data)
	if err != nil {
		return "", err
	}
	return HashBytes(canon), nil
}

// Canonical returns the canonical JSON of the document as it stands (after
// defaults when it came from Parse). Parse(Canonical(doc)) yields an equal
// document.
func Canonical(doc *Document) ([]byte, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("recipes: encode document: %w", err)
	}
	v, err := decodeGeneric(raw)
	if err != nil {
		return nil, fmt.Errorf("recipes: encode document: %w", err)
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Hash returns the hash of the document as it stands (after defaults when it
// came from Parse): HashBytes(Canonical(doc)). It returns "" only when the
// document cannot be encoded, which happens only for a hand-built document
// holding invalid json.RawMessage values.
func Hash(doc *Document) string {
	b, err := Canonical(doc)
	if err != nil {
		return ""
	}
	return HashBytes(b)
}

// CanonicalValue writes a generic JSON value (as decoded by encoding/json, with
// or without UseNumber) in canonical form.
func CanonicalValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if v {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case string:
		writeString(buf, v)
	case json.Number:
		buf.WriteString(normalizeNumber(string(v)))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("recipes: %v cannot be written as JSON", v)
		}
		buf.WriteString(normalizeNumber(strconv.FormatFloat(v, 'g', -1, 64)))
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, v[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, x); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	default:
		return fmt.Errorf("recipes: cannot canonicalize a %T", v)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // strings always encode
	buf.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// maxExactInt is 2^53: integers up to it are exact in a float64.
const maxExactInt = 1 << 53

// normalizeNumber writes a JSON number literal in a canonical form: integers
// without exponent or fraction ("1.0", "1e0" → "1"; "-0" → "0"), other values
// in the shortest form that round-trips through float64. Integer literals too
// large for a float64 to hold exactly keep all their digits; literals out of
// float64 range are kept as written.
func normalizeNumber(s string) string {
	if isIntLiteral(s) {
		if bi, ok := new(big.Int).SetString(s, 10); ok {
			if bi.CmpAbs(big.NewInt(maxExactInt)) > 0 {
				return bi.String()
			}
			return strconv.FormatInt(bi.Int64(), 10)
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	if f == 0 {
		return "0"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return trimExponent(strconv.FormatFloat(f, 'g', -1, 64))
}

// trimExponent drops leading zeros of an exponent: "1e-07" → "1e-7".
func trimExponent(s string) string {
	i := strings.IndexByte(s, 'e')
	if i < 0 || i+2 >= len(s) {
		return s
	}
	mant, sign, exp := s[:i], s[i+1], strings.TrimLeft(s[i+2:], "0")
	if exp == "" {
		exp = "0"
	}
	return mant + "e" + string(sign) + exp
}

func isIntLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
