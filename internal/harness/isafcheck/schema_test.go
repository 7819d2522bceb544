package isafcheck

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/onceledger/onceledger/ledger"
)

// The schema is VMI's as mirrored (its digest is the one its provenance
// names), and xmllint applies it: a file that breaks it is refused with
// the element xmllint names, whatever the project's own rules say.
func TestSchemaRefusesWhatVMIsSchemaRefuses(t *testing.T) {
	sum := sha256.Sum256(schemaXSD)
	if got := hex.EncodeToString(sum[:]); got != "c7f54dd37877c1dded3a6d2cc47fd7d6c0b7701ebe36e70906f92519e8c84513" {
		t.Fatalf("the embedded schema's SHA-256 is %s, not the mirrored file's", got)
	}
	header := `<?xml version="1.0" encoding="UTF-8"?>
<iSAFFile xmlns="` + ledger.ISAFNamespace + `"><Header><FileDescription>`
	for name, doc := range map[string]string{
		"no header":       `<?xml version="1.0" encoding="UTF-8"?><iSAFFile xmlns="` + ledger.ISAFNamespace + `"></iSAFFile>`,
		"unknown element": header + `<Nonsense/></FileDescription></Header></iSAFFile>`,
		"another root":    `<?xml version="1.0" encoding="UTF-8"?><invoice/>`,
	} {
		errs := Schema([]byte(doc))
		if len(errs) == 0 {
			t.Errorf("%s: valid by the schema", name)
			continue
		}
		for _, e := range errs {
			if !strings.HasPrefix(e, "schema: ") {
				t.Errorf("%s: %q is not xmllint's refusal", name, e)
			}
		}
		t.Logf("%s: %s", name, strings.Join(errs, "; "))
	}
}
