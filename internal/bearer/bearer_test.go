package bearer

import (
	"bytes"
	"testing"
)

func TestTokensAreShapedPrefixedAndHashed(t *testing.T) {
	a, err := New("olt_")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New("olt_")
	if a == b || !Shaped(a, "olt_") || Shaped(a, "olo_") || Shaped(a[:len(a)-1], "olt_") {
		t.Fatalf("tokens %q %q", a, b)
	}
	if !bytes.Equal(Hash(a), Hash(a)) || bytes.Equal(Hash(a), Hash(b)) || len(Hash(a)) != 32 {
		t.Fatal("hashes do not tell tokens apart")
	}
}
