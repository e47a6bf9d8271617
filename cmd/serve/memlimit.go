package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// byteSize is a flag value of bytes: a plain number, or one with a unit
// (KiB, MiB, GiB, TiB, or KB, MB, GB, TB in powers of 1000).
type byteSize int64

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

func (b *byteSize) String() string {
	if *b <= 0 {
		return strconv.FormatInt(int64(*b), 10)
	}
	return formatSize(int64(*b))
}

func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(num), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return fmt.Errorf("%q is not a size in bytes (e.g. 536870912, 512MiB, 2GiB)", s)
	}
	*b = byteSize(n * mult)
	return nil
}

// formatSize writes n in the largest binary unit that divides it; 0 is
// "none".
func formatSize(n int64) string {
	if n <= 0 {
		return "none"
	}
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// cgroupShare is the part of the cgroup's limit given to the Go runtime as
// its soft limit; the rest is headroom for memory the runtime does not
// manage (stacks of threads in the kernel, the binary).
const cgroupShare = 0.9

// applyMemoryLimit sets the runtime's soft memory limit: flagLimit if
// positive, else GOMEMLIMIT's if set (the runtime applied it already),
// else 90% of the cgroup's memory limit if there is one. It returns the
// limit in force (0 for none) and where it came from.
func applyMemoryLimit(flagLimit int64, getenv func(string) string) (int64, string) {
	switch {
	case flagLimit > 0:
		debug.SetMemoryLimit(flagLimit)
		return flagLimit, "--memory-limit"
	case getenv("GOMEMLIMIT") != "" && getenv("GOMEMLIMIT") != "off":
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT"
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	if l := cgroupMemoryLimit("/sys/fs/cgroup", self); l > 0 {
		limit := int64(float64(l) * cgroupShare)
		debug.SetMemoryLimit(limit)
		return limit, "cgroup"
	}
	return 0, "none"
}

// cgroupMemoryLimit returns the smallest memory limit set on the cgroup
// named in selfCgroup (the text of /proc/self/cgroup) or its ancestors,
// under root (normally /sys/fs/cgroup): cgroup v2's memory.max, or v1's
// memory/memory.limit_in_bytes. 0 means no limit.
func cgroupMemoryLimit(root string, selfCgroup []byte) int64 {
	var limit int64
	consider := func(file string, parse func(string) int64) {
		data, err := os.ReadFile(file)
		if err != nil {
			return
		}
		if l := parse(strings.TrimSpace(string(data))); l > 0 && (limit == 0 || l < limit) {
			limit = l
		}
	}
	v2 := func(s string) int64 {
		if s == "max" {
			return 0
		}
		n, _ := strconv.ParseInt(s, 10, 64)
		return n
	}
	v1 := func(s string) int64 {
		n, _ := strconv.ParseInt(s, 10, 64)
		if n >= 1<<60 { // "no limit" is the largest page-aligned int64
			return 0
		}
		return n
	}
	walk := func(dir, rel, file string, parse func(string) int64) {
		for p := path.Clean("/" + rel); ; p = path.Dir(p) {
			consider(filepath.Join(dir, filepath.FromSlash(p), file), parse)
			if p == "/" {
				return
			}
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(selfCgroup))
	seen := false
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			walk(root, parts[2], "memory.max", v2)
			seen = true
		case hasController(parts[1], "memory"):
			walk(filepath.Join(root, "memory"), parts[2], "memory.limit_in_bytes", v1)
			seen = true
		}
	}
	if !seen { // no /proc/self/cgroup: the root files of either version
		consider(filepath.Join(root, "memory.max"), v2)
		consider(filepath.Join(root, "memory", "memory.limit_in_bytes"), v1)
	}
	return limit
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}
