package consumer

// SetAfterCommit installs a hook that runs after a command's commit and
// before its message is settled.
func SetAfterCommit(c *Config, f func(*Delivery)) { c.afterCommit = f }
