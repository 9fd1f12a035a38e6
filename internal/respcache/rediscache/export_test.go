package rediscache

// Block is how long one stream read waits, for the test of the follower's
// reads.
const Block = block
