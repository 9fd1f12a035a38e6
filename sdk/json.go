package sdk

// A minimal JSON scanner: enough to find a top-level object field or an array
// element without decoding anything else, which keeps a plugin's cost
// proportional to what it reads. It assumes the host's input is valid JSON
// (the host parsed it) and returns false rather than guessing otherwise.

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value starting at i, or -1.
func skipValue(b []byte, i int) int {
	i = skipSpace(b, i)
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\n', '\r', '\t':
				return i
			}
			i++
		}
		return i
	}
}

func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// objectField finds the raw value of key name in the JSON object b.
func objectField(b []byte, name string) ([]byte, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == '}' {
			return nil, false
		}
		if b[i] != '"' {
			return nil, false
		}
		end := skipString(b, i)
		if end < 0 {
			return nil, false
		}
		key := b[i+1 : end-1]
		i = skipSpace(b, end)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		start := skipSpace(b, i+1)
		vend := skipValue(b, start)
		if vend < 0 {
			return nil, false
		}
		// Keys with escapes are compared as written; field names the host
		// cares about have none.
		if string(key) == name {
			return b[start:vend], true
		}
		i = skipSpace(b, vend)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
}

// arrayElem finds the raw value of element n of the JSON array b.
func arrayElem(b []byte, n int) ([]byte, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' || n < 0 {
		return nil, false
	}
	i++
	for k := 0; ; k++ {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] == ']' {
			return nil, false
		}
		end := skipValue(b, i)
		if end < 0 {
			return nil, false
		}
		if k == n {
			return b[i:end], true
		}
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
}

// unquote decodes a JSON string literal (with its quotes); ok is false when b
// is not one.
func unquote(b []byte) (string, bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	s := b[1 : len(b)-1]
	plain := true
	for _, c := range s {
		if c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(s), true
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(s) {
			return "", false
		}
		switch s[i] {
		case '"', '\\', '/':
			out = append(out, s[i])
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			if i+4 >= len(s) {
				return "", false
			}
			r := rune(0)
			for _, h := range s[i+1 : i+5] {
				r <<= 4
				switch {
				case h >= '0' && h <= '9':
					r |= rune(h - '0')
				case h >= 'a' && h <= 'f':
					r |= rune(h-'a') + 10
				case h >= 'A' && h <= 'F':
					r |= rune(h-'A') + 10
				default:
					return "", false
				}
			}
			i += 4
			out = appendRune(out, r)
		default:
			return "", false
		}
	}
	return string(out), true
}

func appendRune(b []byte, r rune) []byte {
	switch {
	case r < 0x80:
		return append(b, byte(r))
	case r < 0x800:
		return append(b, 0xC0|byte(r>>6), 0x80|byte(r&0x3F))
	default:
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
	}
}

// Unquote decodes a JSON string literal such as a field returned by
// Request.Field (surrogate pairs are kept as two code points).
func Unquote(raw []byte) (string, bool) { return unquote(raw) }
