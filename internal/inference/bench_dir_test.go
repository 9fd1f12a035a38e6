package inference_test

import "os"

// tempDir holds the benchmark models for the life of the test binary (benchmarks share them).
func tempDir() (string, error) { return os.MkdirTemp("", "junction-inference-bench-") }
