package consumer

import "github.com/onceledger/onceledger/consumer/transport"

// attrOutcome is what the handler path records on a delivery's span: what
// became of it, in the words of the onceledger_commands_total outcome label.
const attrOutcome = transport.AttrOutcome
