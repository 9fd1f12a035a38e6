package slots

import "strings"

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

func pairs(s string) map[string]string {
	m := map[string]string{}
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			v = k
		}
		m[k] = v
	}
	return m
}

var symbols = map[rune]string{'$': "dollar", '€': "euro", '£': "pound", '¥': "yen", '%': "percent"}

// units maps a unit or currency word (singular; a trailing s is dropped
// before looking up words longer than three letters) to its name.
var units = pairs(`dollar usd=dollar bucks=dollar buck=dollar euro eur=euro pound gbp=pound yen jpy=yen yuan rmb=yuan cny=yuan
rupee inr=rupee franc chf=franc peso won rouble ruble=rouble bitcoin btc=bitcoin cent percent percentage=percent
km=kilometer kilometer kilometre=kilometer mile mi=mile m=meter meter metre=meter cm=centimeter centimeter mm=millimeter millimeter
foot feet=foot ft=foot inch yard kg=kilogram kilogram kilo=kilogram g=gram gram lb=pound_weight lbs=pound_weight ounce oz=ounce ton tonne
liter litre=liter l=liter ml=milliliter milliliter gallon quart pint cup tablespoon teaspoon
celsius fahrenheit kelvin degree °c=celsius °f=fahrenheit
second sec=second minute min=minute hour hr=hour day week month year decade century
byte kb=kilobyte kilobyte mb=megabyte megabyte gb=gigabyte gigabyte tb=terabyte terabyte
watt kw=kilowatt kilowatt kwh=kilowatt_hour volt amp ampere=amp hz=hertz hertz mph kph=kmh kmh calorie kcal=calorie
acre hectare mph`)

var numberWords = pairs(`zero=0 one=1 two=2 three=3 four=4 five=5 six=6 seven=7 eight=8 nine=9 ten=10 eleven=11 twelve=12
thirteen=13 fourteen=14 fifteen=15 sixteen=16 seventeen=17 eighteen=18 nineteen=19 twenty=20 thirty=30 forty=40 fifty=50
sixty=60 seventy=70 eighty=80 ninety=90 hundred=100 thousand=1000 million=1e6 billion=1e9 trillion=1e12 dozen=12 half=0.5
quarter=0.25 double=x2 triple=x3 twice=x2 first=1st second=2nd third=3rd fourth=4th fifth=5th last=last`)

var dateWords = set(`today tomorrow yesterday tonight morning afternoon evening night noon midnight weekend weekday
monday tuesday wednesday thursday friday saturday sunday
january february march april may june july august september october november december
jan feb mar apr jun jul aug sep sept oct nov dec
next previous ago am pm spring summer autumn fall winter
utc gmt est pst cet`)

var languages = pairs(`english french german spanish italian portuguese dutch swedish norwegian danish finnish polish czech
russian ukrainian greek turkish arabic hebrew hindi bengali urdu persian farsi=persian chinese mandarin=chinese cantonese japanese
korean vietnamese thai indonesian malay tagalog swahili latin irish welsh romanian hungarian
python golang=go rust java javascript js=javascript typescript ts=typescript ruby php kotlin swift scala haskell perl
sql bash powershell c++=cpp cpp c# csharp=c# lua elixir erlang clojure dart fortran cobol matlab julia`)

// stop are function words and the filler of questions ("can you tell me",
// "please", "what is the way to"): they do not change what is asked.
var stop = set(`a an the and or but if then so of to in on at by for with from into onto about as than
is are was were be been being am do does did done doing have has had having will would shall should can could may might must
i me my mine we us our you your yours he him his she her it its they them their this that these those there here
what which whats how
please kindly tell show explain give let know want need help like just really also very quite some any
way ways thing things something anything tell me exactly actually basically simply
roughly approximately precisely
hi hello hey thanks thank ok okay
get got make made use using used`)

// word is what the lists above say of one word.
type word struct {
	unit, number, language string // the name it stands for, "" when none
	date, stop             bool
}

// lexicon merges the lists, so that a token is looked up once (a
// question's words are mostly in none of them).
var lexicon = func() map[string]word {
	m := map[string]word{}
	for k, v := range units {
		w := m[k]
		w.unit = v
		m[k] = w
	}
	for k, v := range numberWords {
		w := m[k]
		w.number = v
		m[k] = w
	}
	for k, v := range languages {
		w := m[k]
		w.language = v
		m[k] = w
	}
	for k := range dateWords {
		w := m[k]
		w.date = true
		m[k] = w
	}
	for k := range stop {
		w := m[k]
		w.stop = true
		m[k] = w
	}
	return m
}()
