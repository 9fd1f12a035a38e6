//go:build !wasip1

package sdk

import "github.com/junction-router/junction/hostapi/abi"

// Outside a wasm guest there is no host: every host function answers
// unavailable, so the package still builds (and its pure parts can be tested)
// natively.

func noHost(inPtr, inLen, outPtr, outCap, outLenPtr uint32) int32 {
	return int32(abi.StatusUnavailable)
}

var (
	hostLog            hostFunc = noHost
	hostConfig         hostFunc = noHost
	hostEmbed          hostFunc = noHost
	hostVectorSearch   hostFunc = noHost
	hostCacheLookup    hostFunc = noHost
	hostCacheStore     hostFunc = noHost
	hostClassify       hostFunc = noHost
	hostTokenCount     hostFunc = noHost
	hostNow            hostFunc = noHost
	hostResult         hostFunc = noHost
	hostPIISpans       hostFunc = noHost
	hostRetrieve       hostFunc = noHost
	hostMemoryRecall   hostFunc = noHost
	hostMemoryRemember hostFunc = noHost
)
