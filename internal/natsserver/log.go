package natsserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// levelTrace sits below Debug because the server's trace output (every
// protocol message) is far noisier than its debug output.
const levelTrace = slog.LevelDebug - 4

// logAdapter implements server.Logger. It is installed even without a
// slog.Logger so that fatal errors, which the server only reports through its
// logger, still reach Start.
type logAdapter struct {
	logger *slog.Logger

	mu    sync.Mutex
	fatal string
	seen  bool
}

func newLogAdapter(logger *slog.Logger) *logAdapter {
	return &logAdapter{logger: logger}
}

func (l *logAdapter) enabled(level slog.Level) bool {
	return l.logger != nil && l.logger.Enabled(context.Background(), level)
}

func (l *logAdapter) fatalMessage() (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal, l.seen
}

func (l *logAdapter) log(level slog.Level, format string, v []any) {
	if !l.enabled(level) {
		return
	}
	l.logger.Log(context.Background(), level, fmt.Sprintf(format, v...), "component", "nats-server")
}

func (l *logAdapter) Noticef(format string, v ...any) { l.log(slog.LevelInfo, format, v) }
func (l *logAdapter) Warnf(format string, v ...any)   { l.log(slog.LevelWarn, format, v) }
func (l *logAdapter) Errorf(format string, v ...any)  { l.log(slog.LevelError, format, v) }
func (l *logAdapter) Debugf(format string, v ...any)  { l.log(slog.LevelDebug, format, v) }
func (l *logAdapter) Tracef(format string, v ...any)  { l.log(levelTrace, format, v) }

// Fatalf records the message instead of exiting: a library must not end the
// embedding process.
func (l *logAdapter) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	if !l.seen {
		l.fatal, l.seen = msg, true
	}
	l.mu.Unlock()
	if l.logger != nil {
		l.logger.Error(msg, "component", "nats-server", "fatal", true)
	}
}
