package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// procStatusBytes reads a "Name:   123 kB" field of /proc/self/status.
func procStatusBytes(field string) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, field+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		return n
	}
	return 0
}

// rss is this process's resident set size in bytes (0 where /proc is missing).
func rss() int64 { return procStatusBytes("VmRSS") }

// cpuSample is a reading of the machine's and this process's CPU time.
type cpuSample struct {
	at      time.Time
	busy    uint64 // machine jiffies not idle and not waiting for I/O
	iowait  uint64
	total   uint64
	process time.Duration
	// backends is the CPU time of each local Postgres backend of the run's
	// database, by pid.
	backends map[int]time.Duration
	// nats is the NATS server process's CPU time, when it runs as one.
	nats time.Duration
}

func readCPU(backends []int) cpuSample {
	s := cpuSample{at: time.Now(), backends: map[int]time.Duration{}}
	for _, pid := range backends {
		if d, ok := processCPU(pid); ok {
			s.backends[pid] = d
		}
	}
	if data, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(data, []byte("\n"))
		f := strings.Fields(string(line))
		if len(f) > 5 && f[0] == "cpu" {
			for i, v := range f[1:] {
				n, _ := strconv.ParseUint(v, 10, 64)
				// user nice system idle iowait irq softirq steal [guest guest_nice]:
				// guest time is already counted in user.
				if i >= 8 {
					break
				}
				s.total += n
				switch i {
				case 3:
				case 4:
					s.iowait += n
				default:
					s.busy += n
				}
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.process = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return s
}

// CPU is how busy the machine and this process were during a phase.
type CPU struct {
	// MachineBusy is the share of all cores' time spent working, 0..1.
	MachineBusy float64 `json:"machine_busy"`
	// MachineIOWait is the share of all cores' time idle waiting for I/O.
	MachineIOWait float64 `json:"machine_iowait"`
	// ProcessCores is this process's CPU time per wall-clock second.
	ProcessCores float64 `json:"process_cores"`
	// PostgresCores is the same for the Postgres backends serving the
	// run's database (0 when Postgres is not on this machine).
	PostgresCores float64 `json:"postgres_cores"`
	// NATSCores is the same for the NATS server when it runs as a process
	// of its own (when it is embedded, ProcessCores includes it).
	NATSCores float64 `json:"nats_cores,omitempty"`
	// OtherCores is the rest of the machine's busy time: other Postgres
	// processes (WAL writer, checkpointer, other databases) and anything
	// else running, per wall-clock second.
	OtherCores float64 `json:"other_cores"`
}

func cpuBetween(a, b cpuSample) CPU {
	var c CPU
	if total := b.total - a.total; total > 0 {
		c.MachineBusy = float64(b.busy-a.busy) / float64(total)
		c.MachineIOWait = float64(b.iowait-a.iowait) / float64(total)
	}
	if wall := b.at.Sub(a.at); wall > 0 {
		c.ProcessCores = float64(b.process-a.process) / float64(wall)
		var pg time.Duration
		for pid, end := range b.backends {
			pg += end - a.backends[pid] // a backend that started meanwhile counts whole
		}
		c.PostgresCores = float64(pg) / float64(wall)
		c.NATSCores = float64(b.nats-a.nats) / float64(wall)
		c.OtherCores = max(0, c.MachineBusy*float64(runtime.NumCPU())-c.ProcessCores-c.PostgresCores-c.NATSCores)
	}
	return c
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// processCPU is the CPU time of a local postgres process, or false when
// pid is not one (Postgres on another machine, or the backend is gone).
func processCPU(pid int) (time.Duration, bool) {
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil || !strings.HasPrefix(string(comm), "postgres") {
		return 0, false
	}
	return pidCPU(pid)
}

// pidCPU is the CPU time, user and system, of local process pid so far, or
// false when it cannot be read.
func pidCPU(pid int) (time.Duration, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime and stime are 14 and 15.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, true
}

// rssSampler keeps the largest RSS seen since the last reset.
type rssSampler struct {
	max  atomic.Int64
	stop chan struct{}
	wg   sync.WaitGroup
}

func startRSSSampler(every time.Duration) *rssSampler {
	s := &rssSampler{stop: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			s.observe(rss())
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) observe(v int64) {
	for {
		cur := s.max.Load()
		if v <= cur || s.max.CompareAndSwap(cur, v) {
			return
		}
	}
}

// reset starts a new maximum at the current RSS.
func (s *rssSampler) reset() int64 {
	v := rss()
	s.max.Store(v)
	return v
}

func (s *rssSampler) close() {
	close(s.stop)
	s.wg.Wait()
}

// Machine describes where the run happened.
type Machine struct {
	CPUs        int    `json:"cpus"`
	CPUModel    string `json:"cpu_model"`
	MemoryBytes int64  `json:"memory_bytes"`
	Kernel      string `json:"kernel"`
	LoadAverage string `json:"load_average_at_start"`
	Go          string `json:"go"`
	Postgres    string `json:"postgres"`
	// PostgresSource says where the server came from.
	PostgresSource string `json:"postgres_source"`
	// Autovacuum is the server's autovacuum setting.
	Autovacuum string `json:"postgres_autovacuum"`
	NATS       string `json:"nats"`
	// StreamReplicas is the replicas of each stream the run used, as the
	// servers report them once the worker created them.
	StreamReplicas map[string]int `json:"stream_replicas,omitempty"`
}

func hostMachine() Machine {
	m := Machine{
		CPUs:        runtime.NumCPU(),
		CPUModel:    cpuModel(),
		MemoryBytes: memTotal(),
		Go:          fmt.Sprintf("%s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH),
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			m.LoadAverage = strings.Join(f[:3], " ")
		}
	}
	return m
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func memTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}
