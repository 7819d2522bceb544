package txn

import (
	"github.com/onceledger/onceledger/ledger/exec"
)

// nextPass takes the next pass off pending, commands in execution order
// with each company's commands together: for every company, the longest
// run at the front of its pending commands that share one kind, or only
// the first when that kind is exec.OnePerCompany.
//
// A pass's reads go out together, before any of its writes, and a plan
// sees only its own commands' effects: so a pass never holds two kinds of
// one company, whose reads could miss what the other writes (an invoice
// after the company.create that opens its books, a payment after the
// invoice it pays). Companies share nothing, so their commands commute,
// and running each company's commands in arrival order, run by run, gives
// the books the same commands would give one at a time.
func nextPass(pending []*Item) (pass, rest []*Item) {
	for i := 0; i < len(pending); {
		company, kind := pending[i].Req.Company, pending[i].kindIndex
		_, alone := pending[i].kind.(exec.OnePerCompany)
		j := i + 1
		for !alone && j < len(pending) && pending[j].Req.Company == company && pending[j].kindIndex == kind {
			j++
		}
		pass = append(pass, pending[i:j]...)
		for i = j; i < len(pending) && pending[i].Req.Company == company; i++ {
			rest = append(rest, pending[i])
		}
	}
	return pass, rest
}
