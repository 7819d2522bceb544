package pgcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// fallbackGlob is where Debian and Ubuntu install server binaries, which are
// not on PATH by default there.
const fallbackGlob = "/usr/lib/postgresql/*/bin"

// Find locates a directory holding both initdb and pg_ctl: first on PATH,
// then under /usr/lib/postgresql/*/bin, newest major version first.
func Find() (binDir string, err error) {
	return find(fallbackGlob)
}

func find(fallback string) (string, error) {
	if dir, ok := findOnPath(); ok {
		return dir, nil
	}

	candidates, _ := filepath.Glob(fallback)
	sort.Slice(candidates, func(i, j int) bool {
		return majorVersion(candidates[i]) > majorVersion(candidates[j])
	})
	for _, dir := range candidates {
		if len(missingIn(dir)) == 0 {
			return dir, nil
		}
	}

	var missing []string
	for _, name := range requiredBinaries() {
		if _, err := exec.LookPath(name); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		// Both exist on PATH but in different directories; pg_ctl must sit next
		// to the postgres binary matching initdb, so that does not count.
		missing = requiredBinaries()
	}
	return "", fmt.Errorf(
		"pgcluster: PostgreSQL server binaries not found: %s missing (looked on PATH and in %s); "+
			"set DATABASE_URL to an existing PostgreSQL (e.g. postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable) "+
			"or install PostgreSQL server binaries (Debian: apt-get install postgresql)",
		strings.Join(missing, " and "), fallback)
}

func findOnPath() (string, bool) {
	initdb, err := exec.LookPath("initdb")
	if err != nil {
		return "", false
	}
	dirs := []string{filepath.Dir(initdb)}
	// /usr/local/bin style symlinks: the real directory also holds postgres,
	// which pg_ctl needs to find next to itself.
	if real, err := filepath.EvalSymlinks(initdb); err == nil {
		dirs = append([]string{filepath.Dir(real)}, dirs...)
	}
	for _, dir := range dirs {
		if len(missingIn(dir)) == 0 {
			return dir, true
		}
	}
	return "", false
}

func missingIn(dir string) []string {
	var missing []string
	for _, name := range requiredBinaries() {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, name)
		}
	}
	return missing
}

func majorVersion(binDir string) float64 {
	v, err := strconv.ParseFloat(filepath.Base(filepath.Dir(binDir)), 64)
	if err != nil {
		return -1
	}
	return v
}

func requiredBinaries() []string { return []string{"initdb", "pg_ctl"} }
