package sdk

import "github.com/junction-router/junction/sdk/jsonscan"

// Unquote decodes a JSON string literal such as a field returned by
// Request.Field (see package jsonscan for reading more of a body).
func Unquote(raw []byte) (string, bool) {
	s, err := jsonscan.Unquote(raw)
	return s, err == nil
}
