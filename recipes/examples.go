package recipes

import _ "embed"

//go:embed examples/bench.yaml
var benchRecipes string

// BenchRecipesYAML is the recipes section the load tools and the data-plane
// benchmarks route with, kept in one place so that every figure in
// docs/benchmarks.md is measured on the same routing work: append it to a
// document that declares listeners, providers (models small and big) and
// services.
func BenchRecipesYAML() string { return benchRecipes }
