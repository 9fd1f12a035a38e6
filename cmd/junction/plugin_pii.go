package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/junction-router/junction/hostapi/plugintest"
)

// parsePIIFlag reads --pii: "detect", JSON, or @FILE holding JSON.
func parsePIIFlag(v string) (*plugintest.PIIFixture, error) {
	if v == "" {
		return nil, nil
	}
	if v == "detect" {
		return &plugintest.PIIFixture{Detect: true}, nil
	}
	raw, err := jsonArg("pii", v)
	if err != nil {
		return nil, err
	}
	var f plugintest.PIIFixture
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf(`--pii: %w (want "detect" or {"spans":[{"message","start","end","type","score"}]})`, err)
	}
	return &f, nil
}
