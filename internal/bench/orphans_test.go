package bench

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

func TestOrphanedBy(t *testing.T) {
	t.Parallel()
	host, _ := os.Hostname()
	// A process that has exited: its pid is free (until reused, which the
	// next line makes unlikely to matter).
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	for _, c := range []struct {
		comment string
		want    bool
	}{
		{ownerComment(), false}, // this process
		{fmt.Sprintf("onceledger bench host=%s pid=%d", host, dead), true},
		{fmt.Sprintf("onceledger bench host=%s-elsewhere pid=%d", host, dead), false},
		{fmt.Sprintf("onceledger bench host=%s pid=1", host), false}, // alive
		{"", false},
		{"made by hand", false},
	} {
		if got := orphanedBy(c.comment); got != c.want {
			t.Errorf("orphanedBy(%q) = %v, want %v", c.comment, got, c.want)
		}
	}
}
