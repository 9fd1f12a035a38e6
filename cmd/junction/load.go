package main

import (
	"github.com/junction-router/junction/recipes"
)

// loadDocument reads path, or the built-in configuration when path is empty,
// and returns it with its source hash (the hash of the document as written).
func loadDocument(path string) (*recipes.Document, string, error) {
	if path == "" {
		doc, err := recipes.Builtin()
		if err != nil {
			return nil, "", err
		}
		hash, err := recipes.HashSource(recipes.BuiltinYAML())
		return doc, hash, err
	}
	doc, canon, err := recipes.LoadFile(path)
	if err != nil {
		return nil, "", err
	}
	return doc, recipes.HashBytes(canon), nil
}
