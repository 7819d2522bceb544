package console

import "testing"

func TestOfLimit(t *testing.T) {
	for _, c := range []struct {
		n     uint64
		limit int64
		want  string
	}{
		{0, -1, "0 B, no limit"},
		{1023, 0, "1023 B, no limit"},
		{3 << 20, 1 << 30, "3.0 MiB of 1.0 GiB (0 %)"},
		{768 << 20, 1 << 30, "768.0 MiB of 1.0 GiB (75 %)"},
		{1 << 30, 1 << 30, "1.0 GiB of 1.0 GiB (100 %)"},
	} {
		if got := ofLimit(c.n, c.limit); got != c.want {
			t.Errorf("ofLimit(%d, %d) = %q, want %q", c.n, c.limit, got, c.want)
		}
	}
}
