package webhooks_test

import (
	"testing"

	"github.com/onceledger/onceledger/internal/harness/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }
