package recipes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Tools database files (tool_selection's tools_db_path, spec 001 "Tools
// selection"). A plugin runs sandboxed, without a file system, so the host
// reads the file when it parses a document and hands the plugin its tools
// as the inline tools_db: every parse (serve, a config reload, `junction
// config validate`, the management API's previews and lifecycle) reads the
// file again. The document as written (its canonical JSON and hash) keeps
// tools_db_path; only the parsed document carries the tools.
const (
	// PluginToolSelection is the plugin type whose tools_db_path is read.
	PluginToolSelection = "tool_selection"
	// MaxToolsDBBytes bounds a tools database file.
	MaxToolsDBBytes = 1 << 20
	// MaxToolsDBTools bounds the tools in one (tool_selection's own limit).
	MaxToolsDBTools = 512
)

// resolveToolsDBPaths replaces each tool_selection plugin's tools_db_path
// with the file's tools as tools_db. A relative path is relative to the
// working directory of the process, like a plugin module's path.
func (d *Document) resolveToolsDBPaths() []Problem {
	var ps []Problem
	for i := range d.Recipes {
		for j := range d.Recipes[i].Decisions {
			for k := range d.Recipes[i].Decisions[j].Plugins {
				ref := &d.Recipes[i].Decisions[j].Plugins[k]
				if ref.Type != PluginToolSelection || len(ref.Configuration) == 0 {
					continue
				}
				p := fmt.Sprintf("/recipes/%d/decisions/%d/plugins/%d/configuration", i, j, k)
				cfg, prob := inlineToolsDB(ref.Configuration, p)
				if prob != nil {
					ps = append(ps, *prob)
					continue
				}
				ref.Configuration = cfg
			}
		}
	}
	return ps
}

func inlineToolsDB(raw json.RawMessage, p string) (json.RawMessage, *Problem) {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return raw, nil // not an object: the plugin's own check says so
	}
	rawPath, ok := cfg["tools_db_path"]
	if !ok {
		return raw, nil
	}
	p += "/tools_db_path"
	var path string
	if err := json.Unmarshal(rawPath, &path); err != nil || path == "" {
		return nil, &Problem{Path: p, Code: CodeWrongType, Message: "must be the path of a JSON file of tool definitions"}
	}
	if _, both := cfg["tools_db"]; both {
		return nil, &Problem{Path: p, Code: CodeConflict, Message: "set tools_db (the tools inline) or tools_db_path (a file of them), not both"}
	}
	tools, err := readToolsDB(path)
	if err != nil {
		return nil, &Problem{Path: p, Code: CodeInvalidValue, Message: fmt.Sprintf("tools database %s: %v", path, err)}
	}
	delete(cfg, "tools_db_path")
	cfg["tools_db"] = tools
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, &Problem{Path: p, Code: CodeInternal, Message: err.Error()}
	}
	return out, nil
}

// readToolsDB reads and checks a tools database: a JSON array of tool
// definitions in OpenAI's shape ({"type": "function", "function": {"name":
// ..., "description": ..., "parameters": ...}}), the shape of an inline
// tools_db, each function name once.
func readToolsDB(path string) (json.RawMessage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return nil, fmt.Errorf("is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxToolsDBBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %w", err)
	}
	if len(data) > MaxToolsDBBytes {
		return nil, fmt.Errorf("is over %d bytes", MaxToolsDBBytes)
	}
	var tools []json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&tools); err != nil {
		return nil, fmt.Errorf("must be a JSON array of tool definitions (OpenAI's shape, as in tools_db): %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("has data after its JSON array")
	}
	if len(tools) > MaxToolsDBTools {
		return nil, fmt.Errorf("has %d tools; at most %d", len(tools), MaxToolsDBTools)
	}
	seen := map[string]bool{}
	for i, t := range tools {
		var tool struct {
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		if err := json.Unmarshal(t, &tool); err != nil || tool.Function == nil || tool.Function.Name == "" {
			return nil, fmt.Errorf("[%d] must be a tool object with function.name (OpenAI's shape)", i)
		}
		if seen[tool.Function.Name] {
			return nil, fmt.Errorf("[%d] repeats the function name %q", i, tool.Function.Name)
		}
		seen[tool.Function.Name] = true
	}
	return bytes.TrimSpace(data), nil
}
