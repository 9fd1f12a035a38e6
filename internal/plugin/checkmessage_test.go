package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/junction-router/junction/internal/chat"
)

// checkMessageTwoWalks is checkMessage as it was before it validated and split
// the message in one walk (chat.Valid, then appendMembers).
func checkMessageTwoWalks(raw []byte) (chat.Message, error) {
	if !chat.Valid(raw) {
		return chat.Message{}, errors.New("the message is not valid JSON")
	}
	var buf [8]member
	ms, err := appendMembers(buf[:0], raw)
	if err != nil {
		return chat.Message{}, fmt.Errorf("the message is not a JSON object: %v", err)
	}
	roleRaw := bytes.TrimSpace(lookup(raw, ms, "role"))
	if len(roleRaw) == 0 || roleRaw[0] != '"' {
		return chat.Message{}, errors.New("the message has no role")
	}
	role, err := unquote(roleRaw)
	if err != nil || role == "" {
		return chat.Message{}, errors.New("the message has no role")
	}
	text := ""
	if content := lookup(raw, ms, "content"); len(content) > 0 {
		if text, err = chat.ContentText(content); err != nil {
			return chat.Message{}, fmt.Errorf("the message's content: %v", err)
		}
	}
	return chat.Message{Role: role, Content: text}, nil
}

// TestCheckMessageMatchesTwoWalks: checkMessage gives the two-walk answer
// (message and error text) for the cases below and for 100,000 mutations of
// them (bytes changed, dropped, doubled, inserted).
func TestCheckMessageMatchesTwoWalks(t *testing.T) {
	seeds := []string{
		`{"role":"system","content":"You handle refunds.\n\nYou are helpful."}`,
		` { "role" : "user" , "content" : [ {"type":"text","text":"a"}, {"type":"image_url","image_url":{"url":"x"}} ] } `,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
		`{"r\u006fle":"tool","content":"x","tool_call_id":"c"}`,
		`{"role":"user","role":"system","content":"first wins","content":"second"}`,
		`{"role":"","content":"x"}`, `{"role":7,"content":"x"}`, `{"content":"x"}`, `{"role":"user","content":7}`,
		`{"role":"user"}`, `[]`, `"x"`, `null`, `{}`, `{"role":"user","content":"x"`, `{"role":"u\"ser","content":"\u00e9\ud83d\ude00"}`,
	}
	alphabet := []byte(`{}[]":, \nartx0\u`)
	rng := rand.New(rand.NewPCG(16, 15))
	check := func(raw []byte) {
		t.Helper()
		got, gerr := checkMessage(raw)
		want, werr := checkMessageTwoWalks(raw)
		if got != want || fmt.Sprint(gerr) != fmt.Sprint(werr) {
			t.Fatalf("checkMessage(%q) = %+v, %v; two walks %+v, %v", raw, got, gerr, want, werr)
		}
	}
	valid := 0
	for _, s := range seeds {
		check([]byte(s))
	}
	for k := 0; k < 100000; k++ {
		b := []byte(seeds[rng.IntN(len(seeds))])
		for n := 1 + rng.IntN(3); n > 0 && len(b) > 0; n-- {
			i := rng.IntN(len(b))
			switch rng.IntN(4) {
			case 0:
				b[i] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			case 2:
				b = append(b[:i+1], b[i:]...)
			default:
				b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
			}
		}
		if _, err := checkMessageTwoWalks(b); err == nil {
			valid++
		}
		check(b)
	}
	if valid < 5000 {
		t.Fatalf("only %d of the mutated messages pass: the comparison says little", valid)
	}
}
