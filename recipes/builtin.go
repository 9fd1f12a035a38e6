package recipes

import (
	"bytes"
	_ "embed"
)

//go:embed builtin/default.yaml
var builtinDefault []byte

// BuiltinYAML returns the source of the built-in configuration (a copy): a
// commented YAML document, the one a newcomer reads first.
func BuiltinYAML() []byte { return bytes.Clone(builtinDefault) }

// Builtin returns the built-in configuration that `junction serve` runs when no
// configuration is given, parsed and with defaults applied. Its models are
// answered in-process by the demo responder (provider demo), so it routes
// without any external backend. Each call returns a fresh document.
func Builtin() (*Document, error) {
	return Parse(builtinDefault)
}
