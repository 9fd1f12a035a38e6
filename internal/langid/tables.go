//go:build !nolingua

package langid

import (
	"math/bits"
	"unicode"

	lingua "github.com/pemistahl/lingua-go"
)

// The tables below are copied from lingua-go v1.4.0 (Apache License 2.0,
// Copyright © 2021-present Peter M. Stahl): language.go's alphabets and
// uniqueCharacters, constant.go's charsToLanguagesMapping. They decide
// lingua's rules and filters, so they must stay lingua's.

// alphabet is one of lingua's scripts, in lingua's order (filterByRules
// takes the first that matches a word).
type alphabet int

const (
	arabic alphabet = iota
	armenian
	bengali
	cyrillic
	devanagari
	georgian
	greek
	gujarati
	gurmukhi
	han
	hangul
	hebrew
	hiragana
	katakana
	latin
	tamil
	telugu
	thai
	numAlphabets
)

var alphabetTables = [numAlphabets]*unicode.RangeTable{
	unicode.Arabic, unicode.Armenian, unicode.Bengali, unicode.Cyrillic, unicode.Devanagari,
	unicode.Georgian, unicode.Greek, unicode.Gujarati, unicode.Gurmukhi, unicode.Han, unicode.Hangul,
	unicode.Hebrew, unicode.Hiragana, unicode.Katakana, unicode.Latin, unicode.Tamil, unicode.Telugu,
	unicode.Thai,
}

// latin1Alphabets[r] has bit a set when alphabet a's script holds r, for
// the runes below 256 that most text is made of: the rules test every word
// against the alphabets in turn, and a table lookup answers what a search of
// each script's range table would.
var latin1Alphabets = func() (t [256]uint32) {
	for r := range t {
		for a := alphabet(0); a < numAlphabets; a++ {
			if unicode.Is(alphabetTables[a], rune(r)) {
				t[r] |= 1 << a
			}
		}
	}
	return t
}()

// matchesRune is lingua's alphabet.matches on a one-character string.
func (a alphabet) matchesRune(r rune) bool {
	if uint32(r) < uint32(len(latin1Alphabets)) {
		return latin1Alphabets[r]&(1<<a) != 0
	}
	return unicode.Is(alphabetTables[a], r)
}

// matchesWord is lingua's alphabet.matches (^\p{Script}+$) on a word.
func (a alphabet) matchesWord(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !a.matchesRune(r) {
			return false
		}
	}
	return true
}

// firstAlphabet is the first alphabet, in lingua's order, that matches the
// whole word (matchesWord), if one does. A word of runes below 256 is one
// pass over it: the alphabets that hold all its runes are the intersection
// of theirs in latin1Alphabets.
func firstAlphabet(w string) (alphabet, bool) {
	mask := uint32(1)<<numAlphabets - 1
	for _, r := range w {
		if uint32(r) >= uint32(len(latin1Alphabets)) {
			// Another script: test the alphabets in turn.
			for a := alphabet(0); a < numAlphabets; a++ {
				if a.matchesWord(w) {
					return a, true
				}
			}
			return 0, false
		}
		if mask &= latin1Alphabets[r]; mask == 0 {
			return 0, false
		}
	}
	if w == "" {
		return 0, false
	}
	return alphabet(bits.TrailingZeros32(mask)), true
}

// singleLanguageAlphabets is lingua's allAlphabetsSupportingSingleLanguage.
func singleLanguageAlphabets() map[alphabet]lingua.Language {
	out := map[alphabet]lingua.Language{}
	for a := alphabet(0); a < numAlphabets; a++ {
		var langs []lingua.Language
		for _, l := range lingua.AllLanguages() {
			for _, b := range alphabetsOf(l) {
				if b == a {
					langs = append(langs, l)
				}
			}
		}
		if len(langs) == 1 {
			out[a] = langs[0]
		}
	}
	return out
}

func alphabetsOf(language lingua.Language) []alphabet {
	switch language {
	case
		lingua.Afrikaans,
		lingua.Albanian,
		lingua.Azerbaijani,
		lingua.Basque,
		lingua.Bokmal,
		lingua.Bosnian,
		lingua.Catalan,
		lingua.Croatian,
		lingua.Czech,
		lingua.Danish,
		lingua.Dutch,
		lingua.English,
		lingua.Esperanto,
		lingua.Estonian,
		lingua.Finnish,
		lingua.French,
		lingua.Ganda,
		lingua.German,
		lingua.Hungarian,
		lingua.Icelandic,
		lingua.Indonesian,
		lingua.Irish,
		lingua.Italian,
		lingua.Latin,
		lingua.Latvian,
		lingua.Lithuanian,
		lingua.Malay,
		lingua.Maori,
		lingua.Nynorsk,
		lingua.Polish,
		lingua.Portuguese,
		lingua.Romanian,
		lingua.Shona,
		lingua.Slovak,
		lingua.Slovene,
		lingua.Somali,
		lingua.Sotho,
		lingua.Spanish,
		lingua.Swahili,
		lingua.Swedish,
		lingua.Tagalog,
		lingua.Tsonga,
		lingua.Tswana,
		lingua.Turkish,
		lingua.Vietnamese,
		lingua.Welsh,
		lingua.Xhosa,
		lingua.Yoruba,
		lingua.Zulu:
		return []alphabet{latin}
	case
		lingua.Belarusian,
		lingua.Bulgarian,
		lingua.Kazakh,
		lingua.Macedonian,
		lingua.Mongolian,
		lingua.Russian,
		lingua.Serbian,
		lingua.Ukrainian:
		return []alphabet{cyrillic}
	case lingua.Arabic, lingua.Persian, lingua.Urdu:
		return []alphabet{arabic}
	case lingua.Hindi, lingua.Marathi:
		return []alphabet{devanagari}
	case lingua.Armenian:
		return []alphabet{armenian}
	case lingua.Bengali:
		return []alphabet{bengali}
	case lingua.Chinese:
		return []alphabet{han}
	case lingua.Georgian:
		return []alphabet{georgian}
	case lingua.Greek:
		return []alphabet{greek}
	case lingua.Gujarati:
		return []alphabet{gujarati}
	case lingua.Hebrew:
		return []alphabet{hebrew}
	case lingua.Japanese:
		return []alphabet{hiragana, katakana, han}
	case lingua.Korean:
		return []alphabet{hangul}
	case lingua.Punjabi:
		return []alphabet{gurmukhi}
	case lingua.Tamil:
		return []alphabet{tamil}
	case lingua.Telugu:
		return []alphabet{telugu}
	case lingua.Thai:
		return []alphabet{thai}
	default:
		return []alphabet{}
	}
}

func uniqueCharacters(language lingua.Language) string {
	switch language {
	case lingua.Azerbaijani:
		return "Əə"
	case lingua.Catalan:
		return "Ïï"
	case lingua.Czech:
		return "ĚěŘřŮů"
	case lingua.Esperanto:
		return "ĈĉĜĝĤĥĴĵŜŝŬŭ"
	case lingua.German:
		return "ß"
	case lingua.Hungarian:
		return "ŐőŰű"
	case lingua.Kazakh:
		return "ӘәҒғҚқҢңҰұ"
	case lingua.Latvian:
		return "ĢģĶķĻļŅņ"
	case lingua.Lithuanian:
		return "ĖėĮįŲų"
	case lingua.Macedonian:
		return "ЃѓЅѕЌќЏџ"
	case lingua.Marathi:
		return "ळ"
	case lingua.Mongolian:
		return "ӨөҮү"
	case lingua.Polish:
		return "ŁłŃńŚśŹź"
	case lingua.Romanian:
		return "Țţ"
	case lingua.Serbian:
		return "ЂђЋћ"
	case lingua.Slovak:
		return "ĹĺĽľŔŕ"
	case lingua.Spanish:
		return "¿¡"
	case lingua.Ukrainian:
		return "ҐґЄєЇї"
	case lingua.Vietnamese:
		return "ẰằẦầẲẳẨẩẴẵẪẫẮắẤấẠạẶặẬậỀềẺẻỂểẼẽỄễẾếỆệỈỉĨĩỊịƠơỒồỜờỎỏỔổỞởỖỗỠỡỐốỚớỘộỢợƯưỪừỦủỬửŨũỮữỨứỤụỰựỲỳỶỷỸỹỴỵ"
	case lingua.Yoruba:
		return "ŌōṢṣ"
	default:
		return ""
	}
}

var charsToLanguages = map[string][]lingua.Language{
	"Ãã":     {lingua.Portuguese, lingua.Vietnamese},
	"ĄąĘę":   {lingua.Lithuanian, lingua.Polish},
	"Żż":     {lingua.Polish, lingua.Romanian},
	"Îî":     {lingua.French, lingua.Romanian},
	"Ññ":     {lingua.Basque, lingua.Spanish},
	"ŇňŤť":   {lingua.Czech, lingua.Slovak},
	"Ăă":     {lingua.Romanian, lingua.Vietnamese},
	"İıĞğ":   {lingua.Azerbaijani, lingua.Turkish},
	"ЈјЉљЊњ": {lingua.Macedonian, lingua.Serbian},
	"ẸẹỌọ":   {lingua.Vietnamese, lingua.Yoruba},
	"ÐðÞþ":   {lingua.Icelandic, lingua.Turkish},
	"Ûû":     {lingua.French, lingua.Hungarian},
	"Ōō":     {lingua.Maori, lingua.Yoruba},

	"ĀāĒēĪī": {lingua.Latvian, lingua.Maori, lingua.Yoruba},
	"Şş":     {lingua.Azerbaijani, lingua.Romanian, lingua.Turkish},
	"Ďď":     {lingua.Czech, lingua.Romanian, lingua.Slovak},
	"Ćć":     {lingua.Bosnian, lingua.Croatian, lingua.Polish},
	"Đđ":     {lingua.Bosnian, lingua.Croatian, lingua.Vietnamese},
	"Іі":     {lingua.Belarusian, lingua.Kazakh, lingua.Ukrainian},
	"Ìì":     {lingua.Italian, lingua.Vietnamese, lingua.Yoruba},
	"Øø":     {lingua.Bokmal, lingua.Danish, lingua.Nynorsk},

	"Ūū":     {lingua.Latvian, lingua.Lithuanian, lingua.Maori, lingua.Yoruba},
	"Ëë":     {lingua.Afrikaans, lingua.Albanian, lingua.Dutch, lingua.French},
	"ÈèÙù":   {lingua.French, lingua.Italian, lingua.Vietnamese, lingua.Yoruba},
	"Êê":     {lingua.Afrikaans, lingua.French, lingua.Portuguese, lingua.Vietnamese},
	"Õõ":     {lingua.Estonian, lingua.Hungarian, lingua.Portuguese, lingua.Vietnamese},
	"Ôô":     {lingua.French, lingua.Portuguese, lingua.Slovak, lingua.Vietnamese},
	"ЁёЫыЭэ": {lingua.Belarusian, lingua.Kazakh, lingua.Mongolian, lingua.Russian},
	"ЩщЪъ":   {lingua.Bulgarian, lingua.Kazakh, lingua.Mongolian, lingua.Russian},
	"Òò":     {lingua.Catalan, lingua.Italian, lingua.Vietnamese, lingua.Yoruba},
	"Ææ":     {lingua.Bokmal, lingua.Danish, lingua.Icelandic, lingua.Nynorsk},
	"Åå":     {lingua.Bokmal, lingua.Danish, lingua.Nynorsk, lingua.Swedish},

	"Ýý": {lingua.Czech, lingua.Icelandic, lingua.Slovak, lingua.Turkish, lingua.Vietnamese},
	"Ää": {lingua.Estonian, lingua.Finnish, lingua.German, lingua.Slovak, lingua.Swedish},
	"Àà": {lingua.Catalan, lingua.French, lingua.Italian, lingua.Portuguese, lingua.Vietnamese},
	"Ââ": {lingua.French, lingua.Portuguese, lingua.Romanian, lingua.Turkish, lingua.Vietnamese},

	"Üü":     {lingua.Azerbaijani, lingua.Catalan, lingua.Estonian, lingua.German, lingua.Hungarian, lingua.Spanish, lingua.Turkish},
	"ČčŠšŽž": {lingua.Bosnian, lingua.Czech, lingua.Croatian, lingua.Latvian, lingua.Lithuanian, lingua.Slovak, lingua.Slovene},
	"Çç":     {lingua.Albanian, lingua.Azerbaijani, lingua.Basque, lingua.Catalan, lingua.French, lingua.Portuguese, lingua.Turkish},

	"Öö": {lingua.Azerbaijani, lingua.Estonian, lingua.Finnish, lingua.German, lingua.Hungarian, lingua.Icelandic, lingua.Swedish, lingua.Turkish},

	"Óó":     {lingua.Catalan, lingua.Hungarian, lingua.Icelandic, lingua.Irish, lingua.Polish, lingua.Portuguese, lingua.Slovak, lingua.Spanish, lingua.Vietnamese, lingua.Yoruba},
	"ÁáÍíÚú": {lingua.Catalan, lingua.Czech, lingua.Icelandic, lingua.Irish, lingua.Hungarian, lingua.Portuguese, lingua.Slovak, lingua.Spanish, lingua.Vietnamese, lingua.Yoruba},

	"Éé": {lingua.Catalan, lingua.Czech, lingua.French, lingua.Hungarian, lingua.Icelandic, lingua.Irish, lingua.Italian, lingua.Portuguese, lingua.Slovak, lingua.Spanish, lingua.Vietnamese, lingua.Yoruba},
}
