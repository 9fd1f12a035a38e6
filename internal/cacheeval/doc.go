// Package cacheeval measures the response cache's semantic matching on a
// labelled set of question pairs (plugins/responsecache/testdata/pairs.jsonl,
// written for this project and redistributable with it): pairs that reword
// the same question should hit, pairs that differ in a number, amount, unit,
// date, identifier, named entity, quoted string, negation, language, code
// identifier or one content word must not. A pair hits when the embeddings'
// cosine similarity reaches the threshold and the plugin's guard
// (responsecache.Agree) lets it through, as a semantic lookup does under
// serve. The embedders are the router's: the ONNX GloVe model of the default
// configuration and the hashed lexical fallback. The numbers are in
// docs/benchmarks.md; the command is
//
//	go test ./internal/cacheeval -run TestSemanticCacheQuality -v
//
// It has no code outside its test: it is a measurement, not a library.
package cacheeval
