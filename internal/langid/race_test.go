//go:build race && !nolingua

package langid

func init() { raceBuild = true }
