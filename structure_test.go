package quantserve

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The shape of the code, held by a test: a hand-written file (Go, not a
// test, not generated) stays readable in one sitting, no package holds
// more than a share of the code, and only dispatch chooses a kernel table
// by its name.
const (
	maxFileLines    = 800
	maxPackageShare = 0.30
)

// oversized are files allowed over maxFileLines for a while (none today),
// each with the most lines it may have: a file may shrink, not grow, and
// leaves the list when it fits (the test says so).
var oversized = map[string]int{}

// overShare are packages allowed over maxPackageShare for a while (none
// today), with the most they may hold.
var overShare = map[string]float64{}

// handWritten returns the lines of every hand-written Go file of this
// module by path (nested modules, testdata and generated files left out).
func handWritten(t *testing.T) map[string]int {
	t.Helper()
	generated := regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)
	lines := map[string]int{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if generated.Match(b) {
			return nil
		}
		lines[filepath.ToSlash(path)] = bytes.Count(b, []byte("\n"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) < 100 {
		t.Fatalf("found only %d Go files: is the test running in the module's root?", len(lines))
	}
	return lines
}

func TestFileSizes(t *testing.T) {
	lines := handWritten(t)
	for path, n := range lines {
		limit, listed := oversized[path]
		switch {
		case !listed && n > maxFileLines:
			t.Errorf("%s has %d lines, over %d: split it by what its parts do", path, n, maxFileLines)
		case listed && n > limit:
			t.Errorf("%s has %d lines, more than the %d it had: it may only shrink until it fits in %d", path, n, limit, maxFileLines)
		case listed && n <= maxFileLines:
			t.Errorf("%s fits in %d lines now (%d): take it off the oversized list", path, maxFileLines, n)
		case listed && n < limit:
			t.Logf("%s: %d lines (listed at %d: lower its entry)", path, n, limit)
		}
	}
	for path := range oversized {
		if _, ok := lines[path]; !ok {
			t.Errorf("%s is on the oversized list but is gone: take it off", path)
		}
	}
}

func TestPackageShares(t *testing.T) {
	lines := handWritten(t)
	total := 0
	byPkg := map[string]int{}
	for path, n := range lines {
		total += n
		byPkg[filepath.ToSlash(filepath.Dir(path))] += n
	}
	var pkgs []string
	for p := range byPkg {
		pkgs = append(pkgs, p)
	}
	sort.Slice(pkgs, func(i, j int) bool { return byPkg[pkgs[i]] > byPkg[pkgs[j]] })
	for _, p := range pkgs {
		share := float64(byPkg[p]) / float64(total)
		limit, listed := overShare[p]
		switch {
		case !listed && share > maxPackageShare:
			t.Errorf("package %s holds %.1f%% of the hand-written code (%d of %d lines), over %.0f%%", p, 100*share, byPkg[p], total, 100*maxPackageShare)
		case listed && share > limit:
			t.Errorf("package %s holds %.1f%% of the hand-written code, more than the %.0f%% it may until its operators have moved", p, 100*share, 100*limit)
		case listed && share <= maxPackageShare:
			t.Errorf("package %s holds %.1f%% now: take it off the overShare list", p, 100*share)
		}
	}
	t.Logf("%d hand-written lines; largest packages: %s %d, %s %d, %s %d", total, pkgs[0], byPkg[pkgs[0]], pkgs[1], byPkg[pkgs[1]], pkgs[2], byPkg[pkgs[2]])
}

// TestTablesChosenByDispatch: no package but dispatch (and the benchmark
// that measures every table) compares a kernel table's name to choose
// what runs.
func TestTablesChosenByDispatch(t *testing.T) {
	byName := regexp.MustCompile(`Table\(\)\.Name\s*[!=]=|\.Name\s*[!=]=\s*"(generic|avx2|avx512|avx512vnni|avxvnni|neon|sdot|i8mm)"`)
	allowed := []string{"dispatch", "cmd/bench"}
	for path := range handWritten(t) {
		if slices.Contains(allowed, filepath.ToSlash(filepath.Dir(path))) {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			if byName.Match(sc.Bytes()) {
				t.Errorf("%s:%d chooses by a kernel table's name (only dispatch may): %s", path, line, strings.TrimSpace(sc.Text()))
			}
		}
		f.Close()
	}
}
