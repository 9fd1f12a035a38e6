// Package scaffold writes a new Go plugin project, what `junction plugin new`
// creates: go.mod (built against a Junction checkout through a replace
// directive, or against the SDK and ABI sources this binary carries), the
// plugin, its schema, a fixture and a README. It only writes files; it runs
// nothing and must not be imported by serving code.
package scaffold

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"text/template"

	"github.com/junction-router/junction"
)

// junctionModule is the module path plugin projects import the SDK from.
const junctionModule = "github.com/junction-router/junction"

var pluginName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Options say what to write. SDK is a Junction checkout to build against,
// "" to find one around the working directory, or "embedded" to write the
// SDK this binary carries into the project (what happens when none is found).
type Options struct {
	Name, Dir, Module, SDK string
}

// Write creates the project Dir/Name and returns its directory.
func Write(o Options) (string, error) {
	name := o.Name
	if !pluginName.MatchString(name) {
		return "", fmt.Errorf("plugin name %q: use lower-case letters, digits and _, starting with a letter (it is the plugin type recipes name)", name)
	}
	if o.Module == "" {
		o.Module = "example.com/" + name
	}
	if o.Dir == "" {
		o.Dir = "."
	}
	if o.SDK == "" {
		o.SDK = findJunctionCheckout()
	}
	embedded := o.SDK == "" || o.SDK == "embedded"
	if embedded {
		o.SDK = "./" + embeddedSDKDir
	} else {
		abs, err := filepath.Abs(o.SDK)
		if err != nil {
			return "", err
		}
		if !isJunctionCheckout(abs) {
			return "", fmt.Errorf("--sdk %s is not a Junction checkout (its go.mod must say module %s)", o.SDK, junctionModule)
		}
		o.SDK = abs
	}
	root := filepath.Join(o.Dir, name)
	if _, err := os.Stat(root); err == nil {
		return "", fmt.Errorf("%s already exists; choose another name or --dir", root)
	}
	data := struct{ Name, Module, SDK, Header string }{name, o.Module, o.SDK, "x-" + strings.ReplaceAll(name, "_", "-")}
	if embedded {
		if err := writeEmbeddedSDK(filepath.Join(root, embeddedSDKDir)); err != nil {
			return "", err
		}
	}
	for file, text := range scaffold {
		var b bytes.Buffer
		if err := template.Must(template.New(file).Delims("[[", "]]").Parse(text)).Execute(&b, data); err != nil {
			return "", err
		}
		p := filepath.Join(root, file)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			return "", err
		}
	}
	return root, nil
}

// embeddedSDKDir is where a project gets its copy of the SDK when it is not
// built against a checkout.
const embeddedSDKDir = "junction-sdk"

// writeEmbeddedSDK writes the SDK and ABI sources the binary carries into dir
// as a module of their own (the project's go.mod replaces Junction's module
// with it): they import only the standard library, so the project builds
// offline.
func writeEmbeddedSDK(dir string) error {
	err := fs.WalkDir(junction.PluginSDK, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
			return err
		}
		b, err := junction.PluginSDK.ReadFile(path)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("write the embedded SDK: %w", err)
	}
	mod := "// The Junction plugin SDK and ABI as this junction binary carries them\n// (junction plugin new wrote them; the project's go.mod points here).\nmodule " + junctionModule + "\n\ngo 1.26\n"
	return os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644)
}

// findJunctionCheckout returns the Junction checkout the working directory
// is in, or "".
func findJunctionCheckout() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if isJunctionCheckout(dir) {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

func isJunctionCheckout(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	return strings.TrimSpace(string(first)) == "module "+junctionModule
}

// scaffold is the project `plugin new` writes; [[.Name]] and friends are
// filled in.
var scaffold = map[string]string{
	"go.mod": `module [[.Module]]

go 1.26

require ` + junctionModule + ` v0.0.0-00010101000000-000000000000
[[if .SDK]]
replace ` + junctionModule + ` => [[.SDK]]
[[end]]`,
	".gitignore": "*.wasm\n",
	"schema.json": `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "[[.Name]] plugin configuration",
  "type": "object",
  "additionalProperties": false,
  "required": ["greeting"],
  "properties": {
    "greeting": {"type": "string", "minLength": 1, "description": "The system prompt put before the conversation."}
  }
}
`,
	"main.go": `// Command [[.Name]] is a Junction decision plugin: it puts a configured
// system prompt before the conversation and tags the upstream request with a
// header naming the mode it ran in. Build it with junction plugin build.
package main

import (
	_ "embed"
	"encoding/json"
	"errors"

	"` + junctionModule + `/sdk"
)

//go:embed schema.json
var schema []byte

type config struct {
	Greeting string ` + "`json:\"greeting\"`" + `
}

type plugin struct{ cfg config }

// OnRequest describes the changes; the host applies them.
func (p *plugin) OnRequest(req *sdk.Request, res *sdk.Result) error {
	res.InsertMessage(0, "system", p.cfg.Greeting)
	res.SetHeader("[[.Header]]", req.Mode().String())
	res.Value("messages", itoa(len(req.Messages())))
	res.Detail("added the greeting as a system message")
	return nil
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func init() {
	sdk.Register(sdk.Descriptor{
		Type:        "[[.Name]]",
		Version:     "0.1.0",
		Description: "Put a greeting before the conversation.",
		Schema:      schema,
		Operations: []sdk.Operation{
			{Name: "greet", Kind: "mutation", Description: "insert a system message"},
		},
	}, func(raw []byte) (sdk.Plugin, error) {
		var c config
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, err
		}
		if c.Greeting == "" {
			return nil, errors.New("greeting is required")
		}
		return &plugin{cfg: c}, nil
	})
}

// A reactor's main never runs; the host calls the exported handlers.
func main() {}
`,
	"testdata/greets.json": `{
  "name": "greets in preview without backend calls",
  "mode": "preview",
  "config": {"greeting": "Hello from [[.Name]]."},
  "request": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
  "expect": {
    "status": "applied",
    "request": {"model": "m", "messages": [{"role": "system", "content": "Hello from [[.Name]]."}, {"role": "user", "content": "hi"}]},
    "headers": {"[[.Header]]": ["preview"]},
    "backend_calls": 0,
    "values": {"messages": "1"}
  }
}
`,
	"README.md": "# [[.Name]]\n\nA Junction decision plugin, compiled to WebAssembly.\n\n" +
		"```sh\n" +
		"junction plugin build                 # writes [[.Name]].wasm and prints its sha256\n" +
		"junction plugin test                  # runs testdata/*.json through the plugin host\n" +
		"junction plugin inspect [[.Name]].wasm  # descriptor, imports, exports\n" +
		"junction plugin preview --module [[.Name]].wasm --config '{\"greeting\":\"Hi\"}' \\\n" +
		"  --request '{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}'\n" +
		"```\n\n" +
		"Use it from a recipe decision with its file and digest:\n\n" +
		"```yaml\nplugins:\n  - type: [[.Name]]\n    module: {path: ./[[.Name]].wasm, sha256: <from junction plugin build>}\n    configuration: {greeting: \"Hi\"}\n```\n\n" +
		"Each fixture in testdata/ is a request (`request`, `config`, `mode`: preview, probe or live) and what the plugin\n" +
		"must do (`expect`: status, detail_contains, request, request_contains, request_lacks, headers, immediate_contains,\n" +
		"backend_calls, values).\n",
}
