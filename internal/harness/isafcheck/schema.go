package isafcheck

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// schemaXSD is VMI's i.SAF 1.2 schema (namespace
// http://www.vmi.lt/cms/imas/isaf, annotated "VMI prie FM", modified
// 2016-09-13), as the public repository Apskaita5/Apskaita5 vendors it
// (Source/Apskaita5/Apskaita3/Apskaita/MXFD/isaf_1_2.xsd, commit f566cbc),
// SHA-256 c7f54dd37877c1dded3a6d2cc47fd7d6c0b7701ebe36e70906f92519e8c84513.
// Other public mirrors are reported to differ only in the earliest
// SelectionEndDate allowed.
//
//go:embed isaf_1.2.xsd
var schemaXSD []byte

var (
	schemaOnce sync.Once
	schemaPath string
	schemaErr  error
)

// schemaFile writes the schema to a file of its own, once per process,
// for xmllint to read.
func schemaFile() (string, error) {
	schemaOnce.Do(func() {
		dir, err := os.MkdirTemp("", "onceledger-isaf-schema-")
		if err != nil {
			schemaErr = err
			return
		}
		schemaPath = filepath.Join(dir, "isaf_1.2.xsd")
		schemaErr = os.WriteFile(schemaPath, schemaXSD, 0o644)
	})
	return schemaPath, schemaErr
}

// Schema validates one i.SAF file against VMI's XML schema with xmllint
// (libxml2; Debian: apt-get install libxml2-utils) and returns what it
// refused, one line each. Without xmllint it says so, as an error: the
// files are never taken as valid unchecked.
func Schema(b []byte) []string {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		return []string{"xmllint is not installed, and the i.SAF files are validated against VMI's schema with it (Debian: apt-get install libxml2-utils)"}
	}
	path, err := schemaFile()
	if err != nil {
		return []string{fmt.Sprintf("write the i.SAF schema for xmllint: %v", err)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, xmllint, "--noout", "--nonet", "--schema", path, "-")
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit):
		var errs []string
		for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
			// The verdict's line ("- fails to validate") repeats the errors.
			if line != "" && !strings.HasSuffix(line, " fails to validate") {
				errs = append(errs, "schema: "+line)
			}
		}
		if len(errs) == 0 {
			errs = []string{fmt.Sprintf("schema: xmllint exited %d: %s", exit.ExitCode(), strings.TrimSpace(stderr.String()))}
		}
		return errs
	default:
		return []string{fmt.Sprintf("run xmllint: %v", err)}
	}
}
