//go:build !linux && !nolingua

package langid

// releaseEmbedded does nothing where madvise's semantics are not Linux's.
func releaseEmbedded(string) {}
