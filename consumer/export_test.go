package consumer

// SetAfterCommit installs a hook that runs after a command's commit and
// before its message is settled.
func SetAfterCommit(c *Config, f func(*Delivery)) { c.afterCommit = f }

// SetBeforeHandle installs a hook that runs first in the router's handler
// of every delivery, outside group commit.
func SetBeforeHandle(c *Config, f func(*Delivery)) { c.beforeHandle = f }
