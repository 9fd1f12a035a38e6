package recipes

import (
	"reflect"
	"slices"
	"testing"
)

// Kinds and Signals.Names are the one list of signal kinds; this holds them to
// the Signals struct, so a ninth kind added as a field cannot be left out.
func TestSignalsNamesCoversEveryField(t *testing.T) {
	var s Signals
	v := reflect.ValueOf(&s).Elem()
	if v.NumField() != len(Kinds) {
		t.Fatalf("Signals has %d fields, Kinds lists %d kinds", v.NumField(), len(Kinds))
	}
	// One signal in every field, each named after its field.
	for i := range v.NumField() {
		f := v.Field(i)
		one := reflect.New(f.Type().Elem()).Elem()
		one.FieldByName("Name").SetString(v.Type().Field(i).Name)
		f.Set(reflect.Append(f, one))
	}
	var got []string
	for _, k := range Kinds {
		names := s.Names(k)
		if len(names) != 1 {
			t.Fatalf("Names(%q) = %v, want one name", k, names)
		}
		got = append(got, names[0])
	}
	var want []string
	for i := range v.NumField() {
		want = append(want, v.Type().Field(i).Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Names over Kinds gives fields %v, want %v (Kinds in field order)", got, want)
	}
	for _, k := range Kinds {
		if !isKind(k) {
			t.Errorf("isKind(%q) is false", k)
		}
	}
}
