package rediscache

// Gather and Block are the follower's tuning, for the tests of its bounds.
const (
	Gather = gather
	Block  = block
)
