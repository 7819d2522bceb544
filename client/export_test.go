package client

// LoseReplies makes c drop its next n replies, as a network would.
func LoseReplies(c *Client, n int32) { c.loseReplies.Store(n) }

// MsgIDOf is the Nats-Msg-Id the client gives a command: what anyone who
// can predict its key and body can compute.
func MsgIDOf(company, command, key string, body []byte) string {
	fp, named, err := check(company, command, key, body)
	if err != nil {
		panic(err.Message)
	}
	return MsgID(company, named, fp)
}
