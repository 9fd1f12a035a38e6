package docstest

import (
	"fmt"
	"strings"
)

// Command is one command of a shell block.
type Command struct {
	Line  int      // its first line within the block, 1-based
	Words []string // after quote removal; comments dropped
	// Env holds leading NAME=value assignments, removed from Words.
	Env map[string]string
	// Shell is set when the command uses what only a shell does (a pipe,
	// redirection, &, ;, $ expansion): it cannot run as plain words.
	Shell bool
	// Raw is the command's source text, comments included, for running it
	// through a shell.
	Raw string
}

// Commands splits a shell block into commands the way sh would: a newline
// ends a command unless it is quoted or escaped with a backslash, # at the
// start of a word begins a comment, single and double quotes group words.
// Lines that are only comments (including "# output" lines shown after a
// command) are skipped.
func Commands(text string) ([]Command, error) {
	var (
		out   []Command
		cur   *Command
		word  strings.Builder
		in    bool // a word is open (possibly empty: "")
		line  = 1
		start int // byte offset where cur began
	)
	flushWord := func() {
		if in {
			cur.Words = append(cur.Words, word.String())
			word.Reset()
			in = false
		}
	}
	begin := func(i int) {
		if cur == nil {
			cur = &Command{Line: line}
			start = i
		}
	}
	end := func(i int) {
		flushWord()
		if cur != nil && len(cur.Words) > 0 {
			cur.Raw = strings.TrimSpace(text[start:i])
			cur.Env = map[string]string{}
			for len(cur.Words) > 0 {
				k, v, ok := strings.Cut(cur.Words[0], "=")
				if !ok || !isName(k) {
					break
				}
				cur.Env[k] = v
				cur.Words = cur.Words[1:]
			}
			out = append(out, *cur)
		}
		cur = nil
	}
	rs := []rune(text)
	byteAt := func(i int) int { return len(string(rs[:i])) }
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\n':
			end(byteAt(i))
			line++
		case r == ' ' || r == '\t':
			if cur != nil {
				flushWord()
			}
		case r == '#' && !in:
			for i+1 < len(rs) && rs[i+1] != '\n' {
				i++
			}
		case r == '\\':
			if i+1 < len(rs) && rs[i+1] == '\n' {
				i++
				line++
				if cur != nil {
					flushWord()
				}
				continue
			}
			begin(byteAt(i))
			in = true
			if i+1 < len(rs) {
				i++
				word.WriteRune(rs[i])
			}
		case r == '\'' || r == '"':
			begin(byteAt(i))
			in = true
			q := r
			closed := false
			for i++; i < len(rs); i++ {
				c := rs[i]
				if c == '\n' {
					line++
				}
				if c == q {
					closed = true
					break
				}
				if q == '"' && c == '\\' && i+1 < len(rs) && strings.ContainsRune(`"\$`+"`", rs[i+1]) {
					i++
					c = rs[i]
				}
				if q == '"' && c == '$' {
					cur.Shell = true
				}
				word.WriteRune(c)
			}
			if !closed {
				return nil, fmt.Errorf("line %d: unclosed %c quote", cur.Line, q)
			}
		default:
			begin(byteAt(i))
			if strings.ContainsRune("|&;<>$`", r) {
				cur.Shell = true
			}
			in = true
			word.WriteRune(r)
		}
	}
	end(len(text))
	return out, nil
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
