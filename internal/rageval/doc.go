// Package rageval measures retrieval quality end to end: it ingests a small
// labelled corpus (testdata/, written for this project and redistributable
// with it) into a real embedded store through the real ingestion pipeline,
// asks each labelled question through the retrieval library, and reports
// recall@1, recall@5 and the mean reciprocal rank. A question counts as
// answered at rank r when the r-th passage retrieved contains its answer
// phrase. The numbers are in docs/benchmarks.md; the command is
//
//	go test ./internal/rageval -run TestRetrievalQuality -v
//
// It has no code outside its test: it is a measurement, not a library.
package rageval
