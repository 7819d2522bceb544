package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// nulEscape is how JSON writes U+0000 in a string: a raw NUL byte is not
// valid JSON, so a body without this escape holds no NUL.
var nulEscape = []byte(`\u0000`)

// checkNUL refuses a body with U+0000 in any string, naming the first
// field that holds one. PostgreSQL's text cannot store the character, so
// such a command could never be written; refusing it here makes it the
// client's error at once, as every other invalid value is.
func checkNUL(body []byte) *Error {
	if !bytes.Contains(body, nulEscape) {
		return nil // the common case costs one scan
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return nil // the decoder reports what is wrong with the body
	}
	field, ok := findNUL(v, "")
	if !ok {
		return nil // the escape was itself escaped: "\\u0000" is text
	}
	if field == "" {
		field = "body"
	}
	return invalid(field, "must not contain the NUL character (U+0000)")
}

// findNUL returns the path of the first string, key or value, that holds
// U+0000 in v, in the form the validation errors use (lines[0].description).
func findNUL(v any, path string) (string, bool) {
	switch v := v.(type) {
	case string:
		return path, strings.ContainsRune(v, 0)
	case []any:
		for i, e := range v {
			if p, ok := findNUL(e, fmt.Sprintf("%s[%d]", path, i)); ok {
				return p, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if strings.ContainsRune(k, 0) {
				return p, true
			}
			if p, ok := findNUL(v[k], p); ok {
				return p, true
			}
		}
	}
	return "", false
}
