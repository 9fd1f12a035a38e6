//go:build race

package supervise_test

// Built with the race detector, the tests build the junction binary with it
// too, so that `go build` reuses the packages `go test -race` compiled.
func init() { buildFlags = append(buildFlags, "-race") }
