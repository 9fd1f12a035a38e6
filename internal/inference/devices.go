package inference

import (
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// DeviceInfo says whether a device can run models in this process.
type DeviceInfo struct {
	// Device is "cpu" or "cuda:N", as --device takes it.
	Device string `json:"device"`
	// Usable reports whether sessions can be placed on it.
	Usable bool `json:"usable"`
	// Threads is the CPU's logical core count (cpu only).
	Threads int `json:"threads,omitempty"`
	// Reason says why a device is not usable.
	Reason string `json:"reason,omitempty"`
}

// Devices lists the devices this runtime could use: the CPU, and each NVIDIA
// GPU the kernel driver exposes, usable when ONNX Runtime's CUDA execution
// provider can be added for it. A machine without GPUs lists only the CPU.
func (r *Runtime) Devices() []DeviceInfo {
	out := []DeviceInfo{{Device: "cpu", Usable: true, Threads: runtime.NumCPU()}}
	for _, id := range nvidiaGPUs() {
		d := DeviceInfo{Device: device{kind: "cuda", id: id}.String()}
		so, _, note, err := r.sessionOptions(device{kind: "cuda", id: id}, 1)
		switch {
		case err != nil:
			d.Reason = firstLine(err.Error())
		case note != "":
			d.Reason = note
		default:
			d.Usable = true
		}
		if so != nil {
			so.Destroy()
		}
		out = append(out, d)
	}
	return out
}

// nvidiaGPUs are the GPU indexes of the NVIDIA kernel driver (/dev/nvidiaN).
func nvidiaGPUs() []int {
	paths, _ := filepath.Glob("/dev/nvidia[0-9]*")
	var ids []int
	for _, p := range paths {
		if n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(p), "nvidia")); err == nil {
			ids = append(ids, n)
		}
	}
	sort.Ints(ids)
	if len(ids) == 0 {
		if _, err := os.Stat("/proc/driver/nvidia/gpus"); err == nil {
			entries, _ := os.ReadDir("/proc/driver/nvidia/gpus")
			for i := range entries {
				ids = append(ids, i)
			}
		}
	}
	return ids
}
