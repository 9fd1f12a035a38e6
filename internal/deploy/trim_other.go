//go:build !linux || !cgo

package deploy

// trimCHeap does nothing where glibc's malloc_trim is not available.
func trimCHeap() {}
