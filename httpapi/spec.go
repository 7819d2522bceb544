package httpapi

import (
	"embed"
	"fmt"
	"net/http"
	"strings"

	"github.com/onceledger/onceledger/ledger"
)

// The OpenAPI document and the JSON Schemas of the command bodies are
// checked-in files, served as they are; tests keep them in step with the
// routes and with ledger.Decode.
var (
	//go:embed openapi.json
	openAPI []byte
	//go:embed schemas/*.json
	schemaFiles embed.FS
)

// OpenAPI returns the OpenAPI 3.1 document of the API. Its request bodies
// refer to the schemas by relative URL (schemas/<command>.json), which
// resolves against /v1/openapi.json as it does in the repository.
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }

// Schema returns the JSON Schema (draft 2020-12) of a command's body.
func Schema(command string) ([]byte, bool) {
	if !ledger.KnownCommand(command) {
		return nil, false
	}
	b, err := schemaFiles.ReadFile("schemas/" + command + ".json")
	return b, err == nil
}

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPI)
}

func serveSchema(w http.ResponseWriter, r *http.Request) {
	file := r.PathValue("file")
	command, ok := strings.CutSuffix(file, ".json")
	b, found := Schema(command)
	if !ok || !found {
		writeProblem(w, ledger.CodeNotFound, fmt.Sprintf("There is no schema %q; the commands are %s (as <command>.json).", file, strings.Join(ledger.CommandNames(), ", ")), nil)
		return
	}
	w.Header().Set("Content-Type", "application/schema+json")
	w.Write(b)
}
