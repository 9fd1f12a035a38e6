package lexical

// Well-known prompt-injection phrasings (English, German, a little Spanish and
// French, as in the shared data). Naive Bayes dilutes an injection appended to
// a long benign question; a phrase hit restores it. Trigger verbs count only
// with an object a few tokens later ("ignore all previous instructions",
// "vergiss alles davor"), so "ignore the noise" stays benign.
var (
	injectionVerbs = setOf("ignore", "ignoring", "disregard", "forget", "skip", "override",
		"ignoriere", "ignorieren", "vergiss", "vergessen", "missachte",
		"olvida", "olvide", "ignora", "oublie", "ignorez")
	injectionObjects = setOf("previous", "prior", "above", "preceding", "earlier", "before", "everything", "all",
		"instructions", "rules", "vorherigen", "obigen", "alles", "anweisungen", "davor",
		"todo", "instrucciones", "tout")
	injectionPhrases = byFirstToken([][]string{
		{"you", "are", "now"}, {"from", "now", "on"}, {"you", "are", "no", "longer"},
		{"pretend", "to", "be"}, {"pretend", "you", "are"}, {"pretend", "you", "can"}, {"pretend", "that"},
		{"act", "as", "a"}, {"act", "as", "an"}, {"act", "as", "if"}, {"imagine", "you", "are"},
		{"new", "instructions"}, {"new", "instruction"}, {"new", "task"}, {"additional", "instruction"},
		{"system", "prompt"}, {"do", "anything", "now"}, {"developer", "mode"}, {"jailbreak"},
		{"du", "bist", "jetzt"}, {"ab", "jetzt"}, {"ab", "sofort"}, {"stell", "dir", "vor"}, {"tu", "so", "als"},
		{"neue", "aufgabe"}, {"neue", "anweisung"}, {"neue", "anweisungen"},
	})
)

// injectionWindow is how many tokens after a trigger verb its object may come.
const injectionWindow = 4

func byFirstToken(phrases [][]string) map[string][][]string {
	m := map[string][][]string{}
	for _, p := range phrases {
		m[p[0]] = append(m[p[0]], p)
	}
	return m
}

func setOf(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// HasInjectionPhrase reports whether text contains one of the well-known
// injection phrasings.
func HasInjectionPhrase(text string) bool {
	var buf [64]string // a prompt's first tokens without growing a slice on the heap
	toks := buf[:0]
	Features{}.tokens(text, func(t string) { toks = append(toks, t) })
	for i, t := range toks {
		if injectionVerbs[t] {
			for j := i + 1; j < len(toks) && j <= i+injectionWindow; j++ {
				if injectionObjects[toks[j]] {
					return true
				}
			}
		}
	phrases:
		for _, p := range injectionPhrases[t] {
			if i+len(p) > len(toks) {
				continue
			}
			for k := 1; k < len(p); k++ {
				if toks[i+k] != p[k] {
					continue phrases
				}
			}
			return true
		}
	}
	return false
}
