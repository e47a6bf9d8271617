package dispatch

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/cpuid/v2"
)

// CPU describes the processor the process runs on, for logs, the
// benchmarks' reports and errors: its name, family and model, the logical
// CPUs the OS gives the process, how many of them share a core, and its
// L3 cache when it is known. The OS's own account (Linux's /proc/cpuinfo
// and CPU topology) comes first: inside a virtual machine the CPUID
// leaves describe the host's part (a 254-core processor with no L3, for a
// two-CPU guest) where the OS describes what the guest has.
func CPU() string { return cpuDescription() }

var cpuDescription = sync.OnceValue(func() string {
	cpuinfo, _ := os.ReadFile("/proc/cpuinfo")
	siblings, _ := os.ReadFile("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
	return describeCPU(string(cpuinfo), string(siblings), runtime.NumCPU())
})

// describeCPU is CPU from the text of /proc/cpuinfo and of cpu0's
// thread_siblings_list (each empty when the OS has none) and the logical
// CPUs the process may use; cpuid fills in what the OS does not say.
func describeCPU(cpuinfo, siblings string, cpus int) string {
	name, family, model := cpuid.CPU.BrandName, "", ""
	for _, line := range strings.Split(cpuinfo, "\n") {
		if line == "" && family != "" {
			break // the first processor's block ends
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch v = strings.TrimSpace(v); strings.TrimSpace(k) {
		case "model name":
			name = v
		case "cpu family":
			family = v
		case "model":
			model = v
		}
	}
	if family == "" && cpuid.CPU.Family > 0 {
		family, model = strconv.Itoa(cpuid.CPU.Family), strconv.Itoa(cpuid.CPU.Model)
	}
	if name == "" {
		name = runtime.GOARCH
	}
	var b strings.Builder
	b.WriteString(name)
	if family != "" && model != "" {
		fmt.Fprintf(&b, " (family %s model %s)", family, model)
	}
	fmt.Fprintf(&b, ", %d CPUs", cpus)
	if n := countCPUList(siblings); n > 0 {
		fmt.Fprintf(&b, ", %d thread(s) per core", n)
	} else if siblings == "" && cpuid.CPU.ThreadsPerCore > 1 {
		fmt.Fprintf(&b, ", %d thread(s) per core", cpuid.CPU.ThreadsPerCore)
	}
	if l3 := cpuid.CPU.Cache.L3; l3 > 0 {
		fmt.Fprintf(&b, ", L3 %d KiB", l3/1024)
	}
	return b.String()
}

// countCPUList counts the CPUs of a Linux CPU list ("0-3,8,10-11"), or
// returns 0 when list is not one.
func countCPUList(list string) int {
	list = strings.TrimSpace(list)
	if list == "" {
		return 0
	}
	n := 0
	for _, r := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(hi); err != nil {
				return 0
			}
		}
		if z < a {
			return 0
		}
		n += z - a + 1
	}
	return n
}
