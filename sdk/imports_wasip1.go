//go:build wasip1

package sdk

// The host's functions, imported from module "junction" (hostapi/abi lists
// them with their records).

//go:wasmimport junction log
func hostLog(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction config
func hostConfig(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction embed
func hostEmbed(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction vector_search
func hostVectorSearch(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction cache_lookup
func hostCacheLookup(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction cache_store
func hostCacheStore(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction classify
func hostClassify(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction token_count
func hostTokenCount(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction now
func hostNow(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction result
func hostResult(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction pii_spans
func hostPIISpans(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction retrieve
func hostRetrieve(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction memory_recall
func hostMemoryRecall(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32

//go:wasmimport junction memory_remember
func hostMemoryRemember(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32
