package consumer

// LockKey exposes the advisory lock key of (company, key) so tests can hold
// a key in flight from outside.
var LockKey = lockKey

// SetAfterCommit installs a hook that runs after a command's commit and
// before its message is settled.
func SetAfterCommit(c *Config, f func(*Delivery)) { c.afterCommit = f }
