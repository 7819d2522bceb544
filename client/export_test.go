package client

// LoseReplies makes c drop its next n replies, as a network would.
func LoseReplies(c *Client, n int32) { c.loseReplies.Store(n) }
