package hostapi

// InstanceMemory is the linear memory size of one idle instance of b.
func InstanceMemory(b *Binding) uint32 {
	i := <-b.idle
	defer func() { b.idle <- i }()
	return i.mem.Size()
}
