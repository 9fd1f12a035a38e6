//go:build linux && cgo

package deploy

// #include <malloc.h>
import "C"

// trimCHeap gives the C heap's free pages back to the system. ONNX Runtime
// allocates through glibc's malloc from many threads (one arena each), and
// glibc keeps what a closed model freed in those arenas; without this, a
// released model's memory stays in the resident set.
func trimCHeap() { C.malloc_trim(0) }
