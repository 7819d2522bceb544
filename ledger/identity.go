package ledger

import (
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"
)

// A supplier's document is recorded once, however the producer spells it.
// Producers name suppliers by ids of their own (one supplier can come as
// "s1" from one system and "s1b" from another) and retype document numbers
// ("A-1", " A-1", "a-1", "A 1", "A–1"): comparing what was sent byte for byte
// books the same input VAT twice. The identity of a purchase invoice is
// therefore (company, SupplierKey, DocumentKey), while the document keeps
// what the supplier printed.
//
// The database computes the same keys with its own functions
// (migrations/00013_supplier_document_identity.sql, the number's by 00043)
// and its unique index on them is the authority: the Go functions only
// let a batch see that its second command repeats its first before the
// database does. Both follow
// the steps below in the same order, and a test runs a table of tricky
// inputs through both. They can only disagree on characters that one
// side's Unicode tables know and the other's do not (Go's x/text, the
// server's ICU and normalize()). Where the database sees a repeat that Go
// does not, its index refuses the batch's write and the commands run again
// one at a time, where the database's lookup decides; where Go sees one
// that the database does not, a batch refuses a second record that alone
// would have been accepted.

// dashes are the hyphen and dash variants a number may be typed with,
// beside '-'; none of them tells numbers apart. U+2011 (non-breaking hyphen) is already
// U+2010 after NFKC, and is listed so the rule does not rest on that.
const dashes = "\u2010\u2011\u2012\u2013\u2014\u2212"

// isSpace reports Unicode White_Space (unicode.IsSpace), spelled out so the
// database's function can list exactly the same characters.
func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', ' ', '\u0085', '\u00a0', '\u1680',
		'\u2000', '\u2001', '\u2002', '\u2003', '\u2004', '\u2005', '\u2006', '\u2007', '\u2008', '\u2009', '\u200a',
		'\u2028', '\u2029', '\u202f', '\u205f', '\u3000':
		return true
	}
	return false
}

// foldCase maps s to one case whatever case it was typed in: full lower
// case, full upper case, full lower case again, with the root locale's
// rules. The round trip makes 'ß', 'ẞ' and "SS" meet ("ss"), and medial
// and final sigma; a plain lower-casing would keep them apart ('ẞ' lowers
// to 'ß', which only uppers to "SS"). The database computes the same with
// ICU's root locale; it has no Unicode case fold (cases.Fold) to agree
// with.
func foldCase(s string) string {
	lower, upper := cases.Lower(language.Und), cases.Upper(language.Und)
	return lower.String(upper.String(lower.String(s)))
}

// DocumentKey is the form of a supplier's document number that identifies
// it: NFKC, case folded (foldCase), NFKC again (case mapping can leave a
// string unnormalised), without white space and dashes of any kind. What a
// supplier prints as "INV-2026 07" and a clerk types as "inv202607" is one
// document; dots, slashes and every other character still tell numbers
// apart.
func DocumentKey(number string) string {
	s := norm.NFKC.String(foldCase(norm.NFKC.String(number)))
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if isSpace(r) || r == '-' || strings.ContainsRune(dashes, r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// registrationKey is the form of a VAT id or a registration code that
// identifies it: NFKC, upper case, without white space, dots and dashes
// ("lt 200.000-000.020" is "LT200000000020").
func registrationKey(id string) string {
	s := cases.Upper(language.Und).String(norm.NFKC.String(id))
	return strings.Map(func(r rune) rune {
		if isSpace(r) || r == '.' || r == '-' || strings.ContainsRune(dashes, r) {
			return -1
		}
		return r
	}, s)
}

// SupplierKey identifies the supplier of a purchase invoice: by its VAT id
// when it has one, else by its registration code, else by the producer's
// id as sent. The prefix keeps the three apart (a code that happens to
// equal someone's VAT id is not that supplier).
func SupplierKey(s Supplier) string {
	if k := registrationKey(s.VATID); k != "" {
		return "vat:" + k
	}
	if k := registrationKey(s.Code); k != "" {
		return "code:" + k
	}
	return "id:" + s.ID
}
