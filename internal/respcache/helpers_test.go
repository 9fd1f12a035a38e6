package respcache_test

import (
	"os"
	"testing"
)

func readExample(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("../../recipes/testdata/example-config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
