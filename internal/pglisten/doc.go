// Package pglisten turns Postgres NOTIFYs into wake-ups for pollers, and
// sends them on behalf of committed transactions.
//
// NOTIFY is not durable: a notification sent while the listening connection
// is down is lost, and one sent before LISTEN ran is never seen. Listen is
// therefore only ever a way to wake up early; its users also poll, and
// treat a wake-up as "look now", never as "there is something". Bursts of
// notifications coalesce into one pending wake-up.
//
// Listen holds one connection of its pool for good (LISTEN state lives on
// the connection) and listens again after a failure. Notifier keeps NOTIFY
// out of the writers' transactions: a transaction that notifies takes a
// database-wide lock while it commits, so writers poke a Notifier after
// they commit and it notifies in a transaction of its own; a notification
// it fails to send only delays the listeners until they poll.
package pglisten
