package ledger

import "testing"

func TestDocumentKey(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"A-1", "a1"},
		{" A-1", "a1"},
		{"a-1", "a1"},
		{"A-1 \t\n", "a1"},
		{"A\u2010" + "1", "a1"}, // hyphen
		{"A\u2011" + "1", "a1"}, // non-breaking hyphen
		{"A\u2012" + "1", "a1"}, // figure dash
		{"A\u2013" + "1", "a1"}, // en dash
		{"A\u2014" + "1", "a1"}, // em dash
		{"A\u2212" + "1", "a1"}, // minus sign
		{"A\uff0d" + "1", "a1"}, // fullwidth hyphen-minus, by NFKC
		{"Ａ－１", "a1"},           // fullwidth letters and digits, by NFKC
		{"Ａ–１", "a1"},
		{"INV  2026\u00a0 7", "inv20267"},
		{"INV\u30002026", "inv2026"},
		{"\u2003A\u20091\u2028", "a1"},
		{"Straße 5", "strasse5"},
		{"STRASSE 5", "strasse5"},
		{"\u1e9e", "ss"},   // capital sharp s
		{"ΟΔΟΣ", "οδος"},   // final sigma
		{"οδος", "οδος"},   // already final
		{"οδοσ", "οδος"},   // medial sigma where a final belongs
		{"ﬁle-1", "file1"}, // ligature, by NFKC
		{"Ⅻ-3", "xii3"},    // roman numeral, by NFKC
		{"e\u0301", "é"},   // composed
		{"É", "é"},
		{"K", "k"},     // Kelvin sign
		{"İ-1", "i̇1"}, // dotted capital I keeps its dot
		{"A--1", "a1"}, // dashes do not tell numbers apart
		{"A 1", "a1"},  // nor do spaces
		{"A1", "a1"},
		{"A.1", "a.1"}, // dots matter in document numbers
		{"a_1/2", "a_1/2"},
		{"INV-2026 07", "inv202607"}, // as printed and as typed
		{"inv202607", "inv202607"},
	}
	for _, tt := range tests {
		if got := DocumentKey(tt.in); got != tt.want {
			t.Errorf("DocumentKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := DocumentKey(DocumentKey(tt.in)); again != DocumentKey(tt.in) {
			t.Errorf("DocumentKey is not idempotent on %q: %q then %q", tt.in, DocumentKey(tt.in), again)
		}
	}
}

func TestSupplierKey(t *testing.T) {
	party := func(id, vat string) Party { return Party{ID: id, Name: "Supplier", VATID: vat, Country: "LT"} }
	tests := []struct {
		name string
		in   Supplier
		want string
	}{
		{"VAT id as sent", Supplier{Party: party("s1", "LT200000000020")}, "vat:LT200000000020"},
		{"VAT id wins over the producer's id", Supplier{Party: party("s1b", "LT200000000020")}, "vat:LT200000000020"},
		{"VAT id spelled loosely", Supplier{Party: party("s1", " lt 200.000-000\u2013020 ")}, "vat:LT200000000020"},
		{"VAT id wins over the code", Supplier{Party: withCode(party("s1", "LT200000000020"), "300000002")}, "vat:LT200000000020"},
		{"code without a VAT id", Supplier{Party: withCode(party("s1", ""), "300 000-002")}, "code:300000002"},
		{"VAT id of only separators", Supplier{Party: withCode(party("s1", " - . "), "300000002")}, "code:300000002"},
		{"the producer's id, as sent", Supplier{Party: party(" s1", "")}, "id: s1"},
	}
	for _, tt := range tests {
		if got := SupplierKey(tt.in); got != tt.want {
			t.Errorf("%s: SupplierKey(%+v) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

// withCode is p with the registration code code.
func withCode(p Party, code string) Party {
	p.Code = code
	return p
}
