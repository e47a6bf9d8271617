package dispatch

import (
	"strings"
	"testing"
)

// TestDescribeCPU: the description takes the OS's name, family, model and
// core topology over the CPUID leaves' (which describe a virtual
// machine's host), counts the CPUs it is given, and reads only the first
// processor's block.
func TestDescribeCPU(t *testing.T) {
	const cpuinfo = `processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 26
model		: 2
model name	: AMD EPYC
flags		: fpu avx2

processor	: 1
vendor_id	: AuthenticAMD
cpu family	: 25
model		: 17
model name	: Another CPU
`
	for _, c := range []struct {
		siblings string
		cpus     int
		want     string
	}{
		{"0\n", 2, "AMD EPYC (family 26 model 2), 2 CPUs, 1 thread(s) per core"},
		{"0-1\n", 2, "AMD EPYC (family 26 model 2), 2 CPUs, 2 thread(s) per core"},
		{"0,32\n", 64, "AMD EPYC (family 26 model 2), 64 CPUs, 2 thread(s) per core"},
	} {
		got := describeCPU(cpuinfo, c.siblings, c.cpus)
		if !strings.HasPrefix(got, c.want) || strings.Contains(got, "Another") {
			t.Errorf("describeCPU(siblings %q, %d CPUs) = %q, want it to begin %q", c.siblings, c.cpus, got, c.want)
		}
	}
	if got := CPU(); got == "" || !strings.Contains(got, "CPUs") {
		t.Errorf("CPU() = %q: no count of CPUs", got)
	}
}

func TestCountCPUList(t *testing.T) {
	for list, want := range map[string]int{
		"0": 1, "0-1": 2, "0,2": 2, "0-3,8,10-11\n": 7, "": 0, "x": 0, "3-1": 0, "0-": 0,
	} {
		if got := countCPUList(list); got != want {
			t.Errorf("countCPUList(%q) = %d, want %d", list, got, want)
		}
	}
}
