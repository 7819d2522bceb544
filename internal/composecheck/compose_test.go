package composecheck

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	natsserver "github.com/nats-io/nats-server/v2/server"
)

const (
	modulePath  = "github.com/onceledger/onceledger"
	projectName = "onceledger"
	composeFile = "docker-compose.yml"
	dockerfile  = "Dockerfile"

	natsConfTarget = "/etc/nats/nats-server.conf"
	binaryPath     = "/onceledger"
	mainPackage    = "./cmd/onceledger"
)

// requiredServices are the services the deployment must define.
var requiredServices = []string{"postgres", "nats", "migrate", "worker"}

// repoRoot walks up from the test's working directory to the directory that
// holds this module's go.mod.
var repoRoot = sync.OnceValues(func() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			if !bytes.Contains(data, []byte("module "+modulePath)) {
				return "", fmt.Errorf("go.mod at %s is not module %s", dir, modulePath)
			}
			return dir, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
})

func root(t *testing.T) string {
	t.Helper()
	dir, err := repoRoot()
	if err != nil {
		t.Fatalf("locating repository root: %v", err)
	}
	return dir
}

// load parses and validates a compose document with a fixed project name and
// a fixed environment, so the result does not depend on the caller's shell or
// on a local .env file. content == nil means "read the file from disk".
// profiles are those enabled, as `docker compose --profile` enables them.
func load(dir, filename string, content []byte, env map[string]string, profiles ...string) (*types.Project, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	details := types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filename, Content: content}},
		Environment: types.Mapping(env),
	}
	return loader.LoadWithContext(ctx, details, func(o *loader.Options) {
		o.SetProjectName(projectName, true)
		o.ResolvePaths = true
		o.Profiles = profiles
	})
}

// testSecretsKey stands for the operator's ONCELEDGER_SECRETS_KEY, the one
// variable without a default.
const testSecretsKey = "b25jZWxlZGdlciB0ZXN0IGtleSwgbm90IGEgc2VjcmU="

// defaultProject is the repository's compose file loaded with an
// environment of only the secrets key (so every ${VAR:-default} takes its
// default). Tests must treat it as read-only because they run in parallel.
var defaultProject = sync.OnceValues(func() (*types.Project, error) {
	dir, err := repoRoot()
	if err != nil {
		return nil, err
	}
	return load(dir, filepath.Join(dir, composeFile), nil, map[string]string{"ONCELEDGER_SECRETS_KEY": testSecretsKey})
})

func project(t *testing.T) *types.Project {
	t.Helper()
	p, err := defaultProject()
	if err != nil {
		t.Fatalf("loading %s: %v", composeFile, err)
	}
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, ok := p.Services[name]
	if !ok {
		t.Fatalf("service %q is not defined in %s", name, composeFile)
	}
	return s
}

func sortedServiceNames(p *types.Project) []string {
	names := make([]string, 0, len(p.Services))
	for name := range p.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func TestComposeLoads(t *testing.T) {
	t.Parallel()
	p := project(t)
	if p.Name != projectName {
		t.Errorf("project name = %q, want %q", p.Name, projectName)
	}
}

func TestRequiredServicesExist(t *testing.T) {
	t.Parallel()
	p := project(t)
	for _, name := range requiredServices {
		if _, ok := p.Services[name]; !ok {
			t.Errorf("service %q missing; defined services: %v", name, sortedServiceNames(p))
		}
	}
}

func TestLongRunningServicesHaveHealthchecks(t *testing.T) {
	t.Parallel()
	p := project(t)
	for _, name := range sortedServiceNames(p) {
		if name == "migrate" { // one-shot job; "healthy" has no meaning for it
			continue
		}
		hc := p.Services[name].HealthCheck
		switch {
		case hc == nil:
			t.Errorf("service %q has no healthcheck", name)
		case hc.Disable:
			t.Errorf("service %q has its healthcheck disabled", name)
		case len(hc.Test) < 2 || (hc.Test[0] != "CMD" && hc.Test[0] != "CMD-SHELL"):
			t.Errorf("service %q healthcheck test = %q, want a CMD or CMD-SHELL command", name, hc.Test)
		}
	}
}

func TestWorkerHealthcheckUsesBinary(t *testing.T) {
	t.Parallel()
	// The runtime image is distroless: there is no shell and no wget/curl,
	// so the check must exec the onceledger binary directly.
	hc := service(t, project(t), "worker").HealthCheck
	if hc == nil {
		t.Fatal("worker has no healthcheck")
	}
	want := types.HealthCheckTest{"CMD", binaryPath, "healthcheck"}
	if !slices.Equal(hc.Test, want) {
		t.Errorf("worker healthcheck test = %q, want %q", hc.Test, want)
	}
}

func TestStartupOrdering(t *testing.T) {
	t.Parallel()
	p := project(t)
	cases := []struct {
		service, dependsOn, condition string
	}{
		{"worker", "postgres", types.ServiceConditionHealthy},
		{"worker", "nats", types.ServiceConditionHealthy},
		{"worker", "migrate", types.ServiceConditionCompletedSuccessfully},
		{"migrate", "postgres", types.ServiceConditionHealthy},
	}
	for _, c := range cases {
		dep, ok := service(t, p, c.service).DependsOn[c.dependsOn]
		if !ok {
			t.Errorf("%s does not depend on %s", c.service, c.dependsOn)
			continue
		}
		if dep.Condition != c.condition {
			t.Errorf("%s depends on %s with condition %q, want %q", c.service, c.dependsOn, dep.Condition, c.condition)
		}
	}
}

func TestAppServicesBuildFromRepoDockerfile(t *testing.T) {
	t.Parallel()
	p := project(t)
	dir := root(t)
	for _, name := range []string{"migrate", "worker"} {
		s := service(t, p, name)
		if s.Build == nil {
			t.Errorf("%s has no build section", name)
			continue
		}
		if filepath.Clean(s.Build.Context) != dir {
			t.Errorf("%s build context = %q, want the repository root %q", name, s.Build.Context, dir)
		}
		df := s.Build.Dockerfile
		if df == "" {
			df = dockerfile
		}
		if !filepath.IsAbs(df) {
			df = filepath.Join(s.Build.Context, df)
		}
		if filepath.Clean(df) != filepath.Join(dir, dockerfile) {
			t.Errorf("%s builds with %q, want %q", name, df, filepath.Join(dir, dockerfile))
		}
		if fi, err := os.Stat(df); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: Dockerfile %q is not a regular file on disk (err=%v)", name, df, err)
		}
	}
}

func TestAppServiceCommands(t *testing.T) {
	t.Parallel()
	p := project(t)
	for name, want := range map[string]types.ShellCommand{
		"migrate": {"migrate"},
		"worker":  {"run"},
	} {
		if got := service(t, p, name).Command; !slices.Equal(got, want) {
			t.Errorf("%s command = %q, want %q", name, got, want)
		}
	}
	if got := service(t, p, "migrate").Restart; got != types.RestartPolicyNo {
		t.Errorf("migrate restart = %q, want %q (it is a one-shot job)", got, types.RestartPolicyNo)
	}
	w := service(t, p, "worker")
	if w.Restart != types.RestartPolicyUnlessStopped {
		t.Errorf("worker restart = %q, want %q", w.Restart, types.RestartPolicyUnlessStopped)
	}
	// SIGKILL must not race the worker's own shutdown bound
	// (ONCELEDGER_SHUTDOWN_TIMEOUT, 30s unless the service sets it): the
	// grace period leaves room for the last commit and the exit after it.
	shutdown := 30 * time.Second
	if v, ok := w.Environment["ONCELEDGER_SHUTDOWN_TIMEOUT"]; ok && v != nil {
		d, err := time.ParseDuration(*v)
		if err != nil {
			t.Fatalf("worker ONCELEDGER_SHUTDOWN_TIMEOUT %q: %v", *v, err)
		}
		shutdown = d
	}
	if w.StopGracePeriod == nil || time.Duration(*w.StopGracePeriod) < shutdown+10*time.Second {
		t.Errorf("worker stop_grace_period = %v, want at least its shutdown timeout %s and 10s more, so that SIGKILL does not cut a shutdown short", w.StopGracePeriod, shutdown)
	}
}

// The image knows its version: the build context keeps .git, from which
// go build stamps the commit (onceledger version, i.SAF's SoftwareVersion).
func TestImageBuildSeesTheCommit(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(root(t), ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if l := strings.TrimSuffix(strings.TrimSpace(line), "/"); l == ".git" || l == "**/.git" {
			t.Errorf(".dockerignore drops %q: the image's binary would not know its commit and say (devel)", line)
		}
	}
}

// Every host address a comment of docker-compose.yml gives (a producer's
// NATS_URL, the API's curl) is one the services publish.
func TestCommentsNameThePublishedPorts(t *testing.T) {
	t.Parallel()
	p := project(t)
	published := map[string]bool{}
	for _, name := range sortedServiceNames(p) {
		for _, port := range p.Services[name].Ports {
			published[port.Published] = true
		}
	}
	b, err := os.ReadFile(filepath.Join(root(t), composeFile))
	if err != nil {
		t.Fatal(err)
	}
	addr := regexp.MustCompile(`127\.0\.0\.1:(\d+)`)
	var named int
	for i, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, m := range addr.FindAllStringSubmatch(line, -1) {
			named++
			if !published[m[1]] {
				t.Errorf("%s:%d names 127.0.0.1:%s, which no service publishes (published: %v)", composeFile, i+1, m[1], published)
			}
		}
	}
	if named == 0 {
		t.Errorf("no comment of %s names a host address: the check found nothing to check", composeFile)
	}
}

func TestAppServiceEnvironment(t *testing.T) {
	t.Parallel()
	dir := root(t)
	cases := []struct {
		name         string
		env          map[string]string
		password     string
		natsPassword string
	}{
		{"default password", map[string]string{"ONCELEDGER_SECRETS_KEY": testSecretsKey}, "onceledger", "worker"},
		{"password from environment", map[string]string{"POSTGRES_PASSWORD": "s3cret", "ONCELEDGER_NATS_WORKER_PASSWORD": "n4ts", "ONCELEDGER_SECRETS_KEY": testSecretsKey}, "s3cret", "n4ts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := load(dir, filepath.Join(dir, composeFile), nil, c.env)
			if err != nil {
				t.Fatalf("loading %s: %v", composeFile, err)
			}
			wantURL := "postgres://onceledger:" + c.password + "@postgres:5432/onceledger?sslmode=disable"
			want := map[string]map[string]string{
				"postgres": {"POSTGRES_USER": "onceledger", "POSTGRES_PASSWORD": c.password, "POSTGRES_DB": "onceledger"},
				"nats":     {"ONCELEDGER_NATS_WORKER_PASSWORD": c.natsPassword},
				"migrate":  {"DATABASE_URL": wantURL},
				"worker": {
					"DATABASE_URL":           wantURL,
					"NATS_URL":               "nats://worker:" + c.natsPassword + "@nats:4222",
					"ONCELEDGER_HTTP_ADDR":   ":8080",
					"ONCELEDGER_HEALTH_ADDR": ":8081", // where `onceledger healthcheck` looks
					"ONCELEDGER_LOG_FORMAT":  "json",
					"ONCELEDGER_SECRETS_KEY": testSecretsKey,
				},
			}
			for name, vars := range want {
				env := service(t, p, name).Environment
				for k, v := range vars {
					got := env[k]
					if got == nil {
						t.Errorf("%s: environment %s is not set", name, k)
					} else if *got != v {
						t.Errorf("%s: environment %s = %q, want %q", name, k, *got, v)
					}
				}
			}
		})
	}
}

// Without a secrets key the project does not load, and says what to do:
// there is no default key, which would seal every secret with a key anyone
// can read here.
func TestSecretsKeyIsRequired(t *testing.T) {
	t.Parallel()
	dir := root(t)
	_, err := load(dir, filepath.Join(dir, composeFile), nil, map[string]string{})
	if err == nil || !strings.Contains(err.Error(), "ONCELEDGER_SECRETS_KEY") || !strings.Contains(err.Error(), "secrets new-key") {
		t.Fatalf("loading without ONCELEDGER_SECRETS_KEY: %v", err)
	}
}

func TestPostgresDurabilitySettings(t *testing.T) {
	t.Parallel()
	cmd := service(t, project(t), "postgres").Command
	for _, setting := range []string{"synchronous_commit=on", "fsync=on"} {
		if !slices.Contains(cmd, setting) {
			t.Errorf("postgres command %q does not set %s", cmd, setting)
		}
	}
	for _, arg := range cmd {
		if arg == "synchronous_commit=off" || arg == "fsync=off" {
			t.Errorf("postgres command disables durability: %q", arg)
		}
	}
}

// natsConfigMount returns the host path of the bind mount that provides the
// NATS server configuration.
func natsConfigMount(t *testing.T) (string, types.ServiceVolumeConfig) {
	t.Helper()
	nats := service(t, project(t), "nats")
	for _, v := range nats.Volumes {
		if v.Target == natsConfTarget {
			if v.Type != types.VolumeTypeBind {
				t.Fatalf("nats mounts %s as %q, want a bind mount of the repository file", natsConfTarget, v.Type)
			}
			return v.Source, v
		}
	}
	t.Fatalf("nats does not mount a config file at %s", natsConfTarget)
	return "", types.ServiceVolumeConfig{}
}

func TestNATSConfigMounted(t *testing.T) {
	t.Parallel()
	nats := service(t, project(t), "nats")
	src, mount := natsConfigMount(t)
	if !mount.ReadOnly {
		t.Errorf("nats config %s is mounted read-write, want read-only", src)
	}
	if !slices.Contains(nats.Command, natsConfTarget) {
		t.Errorf("nats command %q does not load %s", nats.Command, natsConfTarget)
	}
	want := filepath.Join(root(t), "deploy", "nats", "nats-server.conf")
	if src != want {
		t.Errorf("nats config mounted from %q, want %q", src, want)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatalf("mounted nats config does not exist on disk: %v", err)
	}
	for _, word := range []string{"jetstream", "sync_interval"} {
		if !bytes.Contains(data, []byte(word)) {
			t.Errorf("%s does not contain %q", src, word)
		}
	}
}

// natsOptions parses the mounted configuration with the environment compose
// gives the nats service, which holds the users' passwords: a variable the
// configuration needs and compose does not pass fails here, as the server
// would fail to start. Not for parallel tests (t.Setenv).
func natsOptions(t *testing.T) (string, *natsserver.Options) {
	t.Helper()
	src, _ := natsConfigMount(t)
	for k, v := range service(t, project(t), "nats").Environment {
		if v != nil {
			t.Setenv(k, *v)
		}
	}
	opts, err := natsserver.ProcessConfigFile(src)
	if err != nil {
		t.Fatalf("nats-server rejects %s: %v", src, err)
	}
	return src, opts
}

func TestNATSConfigParsesDurable(t *testing.T) {
	// Parse with the nats-server library the project already depends on. The
	// compose file runs a 2.11 image; the options checked here have the same
	// meaning there.
	src, opts := natsOptions(t)
	if !opts.JetStream {
		t.Errorf("%s: JetStream is not enabled", src)
	}
	if !opts.SyncAlways {
		t.Errorf("%s: jetstream sync_interval is not \"always\"; acknowledged publishes could be lost on power failure", src)
	}
	if opts.StoreDir != "/data" {
		t.Errorf("%s: jetstream store_dir = %q, want /data (the natsdata volume)", src, opts.StoreDir)
	}
	if opts.HTTPPort != 8222 {
		t.Errorf("%s: http_port = %d, want 8222 (used by the healthcheck)", src, opts.HTTPPort)
	}
	if opts.Port != 4222 {
		t.Errorf("%s: port = %d, want 4222 (NATS_URL of the worker)", src, opts.Port)
	}
}

// Authentication is on, every user of the configuration has a password
// from compose, a producer is kept to its company's subjects, and the
// worker's NATS_URL carries the worker user's password.
func TestNATSConfigAuthenticates(t *testing.T) {
	src, opts := natsOptions(t)
	users := map[string]*natsserver.User{}
	for _, u := range opts.Users {
		users[u.Username] = u
	}
	for _, name := range []string{"worker", "admin", "acme", "acme-events"} {
		u := users[name]
		if u == nil {
			t.Fatalf("%s: no user %s", src, name)
		}
		if u.Password == "" || u.Permissions == nil {
			t.Errorf("%s: user %s has no password or no permissions", src, name)
		}
	}
	if t.Failed() {
		return
	}
	acme := users["acme"].Permissions
	if got, want := acme.Publish.Allow, []string{"ledger.cmd.acme.>", "ledger.result.acme"}; !slices.Equal(got, want) {
		t.Errorf("%s: acme may publish %q, want %q", src, got, want)
	}
	if got, want := acme.Subscribe.Allow, []string{"_INBOX_acme.>"}; !slices.Equal(got, want) {
		t.Errorf("%s: acme may subscribe %q, want %q", src, got, want)
	}
	for _, s := range users["acme-events"].Permissions.Publish.Allow {
		if !strings.Contains(s, "evt-acme") {
			t.Errorf("%s: acme-events may publish %q, which is not of its own consumer", src, s)
		}
	}
	natsURL := service(t, project(t), "worker").Environment["NATS_URL"]
	u, err := url.Parse(*natsURL)
	if err != nil {
		t.Fatal(err)
	}
	if pw, _ := u.User.Password(); u.User.Username() != "worker" || pw != users["worker"].Password {
		t.Errorf("worker NATS_URL names user %q with a password that is not the worker user's", u.User.Username())
	}
}

func TestPublishedPortsAreLoopbackOnly(t *testing.T) {
	t.Parallel()
	p := project(t)
	for _, name := range sortedServiceNames(p) {
		for _, port := range p.Services[name].Ports {
			if port.HostIP != "127.0.0.1" {
				hostIP := port.HostIP
				if hostIP == "" {
					hostIP = "all interfaces"
				}
				t.Errorf("service %q publishes container port %d on %s, want 127.0.0.1 only", name, port.Target, hostIP)
			}
		}
	}
}

// The worker's API is on 127.0.0.1:8080 by default, where the README's curl
// goes; WORKER_HTTP_PORT moves it, and set empty lets `--scale worker=N`
// start replicas that would otherwise clash on one host port.
func TestWorkerPortIsTheReadmesAndAllowsScaling(t *testing.T) {
	t.Parallel()
	dir := root(t)
	for _, c := range []struct {
		env       map[string]string
		published string
	}{
		{map[string]string{}, "8080"},
		{map[string]string{"WORKER_HTTP_PORT": "18080"}, "18080"},
		{map[string]string{"WORKER_HTTP_PORT": ""}, ""},
	} {
		c.env["ONCELEDGER_SECRETS_KEY"] = testSecretsKey
		p, err := load(dir, filepath.Join(dir, composeFile), nil, c.env)
		if err != nil {
			t.Fatalf("%v: %v", c.env, err)
		}
		var api []types.ServicePortConfig
		for _, port := range service(t, p, "worker").Ports {
			if port.Target == 8080 {
				api = append(api, port)
			}
		}
		if len(api) != 1 || api[0].Published != c.published || api[0].HostIP != "127.0.0.1" {
			t.Errorf("WORKER_HTTP_PORT %q: worker publishes 8080 as %+v, want 127.0.0.1:%s", c.env["WORKER_HTTP_PORT"], api, c.published)
		}
	}

	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "API=http://127.0.0.1:8080") {
		t.Error("README.md's curl no longer goes to 127.0.0.1:8080, where the worker is published")
	}
}

// Postgres is not published on the host and NATS not on 4222, where a
// local server would make `docker compose up` fail: NATS is on
// 127.0.0.1:14222, for producers on the host; the CLI runs inside the
// worker, as the README shows.
func TestServersAreNotPublished(t *testing.T) {
	t.Parallel()
	p := project(t)
	natsPublished := false
	for _, name := range sortedServiceNames(p) {
		for _, port := range p.Services[name].Ports {
			if port.Target == 5432 || port.Published == "5432" || port.Published == "4222" {
				t.Errorf("service %q publishes %s:%s→%d on the host", name, port.HostIP, port.Published, port.Target)
			}
			if port.Target == 4222 {
				natsPublished = true
				if port.HostIP != "127.0.0.1" || port.Published != "14222" {
					t.Errorf("NATS is published on %s:%s, want 127.0.0.1:14222", port.HostIP, port.Published)
				}
			}
		}
	}
	if !natsPublished {
		t.Error("NATS is not published for producers on the host")
	}
	readme, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "docker compose exec -T worker " + binaryPath + " tokens create"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not show how to create a token under compose (%s)", want)
	}
}

func TestStateUsesNamedVolumes(t *testing.T) {
	t.Parallel()
	p := project(t)
	cases := []struct{ service, volume, target string }{
		{"postgres", "pgdata", "/var/lib/postgresql/data"},
		{"nats", "natsdata", "/data"},
	}
	for _, c := range cases {
		if _, ok := p.Volumes[c.volume]; !ok {
			t.Errorf("volume %q is not declared at the top level", c.volume)
		}
		found := false
		for _, v := range service(t, p, c.service).Volumes {
			if v.Target != c.target {
				continue
			}
			found = true
			if v.Type != types.VolumeTypeVolume || v.Source != c.volume {
				t.Errorf("%s mounts %s from %s %q, want named volume %q", c.service, c.target, v.Type, v.Source, c.volume)
			}
		}
		if !found {
			t.Errorf("%s has no volume mounted at %s", c.service, c.target)
		}
	}
}

// checkPinned reports why image is not pinned to a specific version, or "".
func checkPinned(image string) string {
	if strings.Contains(image, "@sha256:") {
		return ""
	}
	// The tag follows the last ':' after the last '/', so a registry port
	// (host:5000/name) is not mistaken for a tag.
	name := image[strings.LastIndex(image, "/")+1:]
	i := strings.LastIndex(name, ":")
	if i < 0 {
		return "no tag (implicitly :latest)"
	}
	tag := name[i+1:]
	switch {
	case tag == "":
		return "empty tag"
	case tag == "latest":
		return "tag :latest"
	}
	return ""
}

func TestCheckPinned(t *testing.T) {
	t.Parallel()
	for image, pinned := range map[string]bool{
		"postgres:16.10":            true,
		"nats:2.11.9-alpine":        true,
		"registry:5000/app:1.2":     true,
		"app@sha256:0123abcd":       true,
		"postgres":                  false,
		"postgres:latest":           false,
		"registry:5000/app":         false,
		"gcr.io/distroless/static:": false,
	} {
		if got := checkPinned(image) == ""; got != pinned {
			t.Errorf("checkPinned(%q) pinned = %v, want %v", image, got, pinned)
		}
	}
}

func TestImagesPinned(t *testing.T) {
	t.Parallel()
	p := project(t)
	for _, name := range sortedServiceNames(p) {
		s := p.Services[name]
		if s.Image == "" {
			if s.Build == nil {
				t.Errorf("service %q has neither image nor build", name)
			}
			continue
		}
		if why := checkPinned(s.Image); why != "" {
			t.Errorf("service %q image %q is not pinned: %s", name, s.Image, why)
		}
	}
}

// dockerInstruction is one instruction of a Dockerfile, with continuation
// lines joined.
type dockerInstruction struct {
	line int
	cmd  string // upper-cased keyword
	args string
}

type dockerStage struct {
	from         string // base image
	name         string // "AS name", may be empty
	instructions []dockerInstruction
}

// parseDockerfile is a small Dockerfile reader: enough to find stages and
// their instructions. It ignores comments/parser directives and joins lines
// ending in a backslash.
func parseDockerfile(data []byte) ([]dockerStage, error) {
	var (
		stages  []dockerStage
		pending strings.Builder
		start   int
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && pending.Len() == 0) {
			continue
		}
		if pending.Len() == 0 {
			start = lineNo
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			pending.WriteString(cont)
			pending.WriteString(" ")
			continue
		}
		pending.WriteString(line)
		full := strings.TrimSpace(pending.String())
		pending.Reset()
		if full == "" {
			continue
		}
		keyword, args, _ := strings.Cut(full, " ")
		ins := dockerInstruction{line: start, cmd: strings.ToUpper(keyword), args: strings.TrimSpace(args)}
		if ins.cmd == "FROM" {
			fields := strings.Fields(ins.args)
			var st dockerStage
			for i := 0; i < len(fields); i++ {
				f := fields[i]
				switch {
				case strings.HasPrefix(f, "--"):
				case strings.EqualFold(f, "AS") && i+1 < len(fields):
					st.name = fields[i+1]
					i++
				case st.from == "":
					st.from = f
				}
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if ins.cmd == "ARG" {
				continue
			}
			return nil, fmt.Errorf("line %d: %s before the first FROM", ins.line, ins.cmd)
		}
		stages[len(stages)-1].instructions = append(stages[len(stages)-1].instructions, ins)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pending.Len() > 0 {
		return nil, errors.New("dangling line continuation at end of file")
	}
	return stages, nil
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	dir := root(t)
	data, err := os.ReadFile(filepath.Join(dir, dockerfile))
	if err != nil {
		t.Fatalf("reading Dockerfile: %v", err)
	}
	stages, err := parseDockerfile(data)
	if err != nil {
		t.Fatalf("parsing Dockerfile: %v", err)
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stage(s), want a multi-stage build", len(stages))
	}
	for _, st := range stages {
		if why := checkPinned(st.from); why != "" {
			t.Errorf("FROM %s is not pinned: %s", st.from, why)
		}
	}

	final := stages[len(stages)-1]
	var entrypoint []string
	var copiedBinary, builder string
	for _, ins := range final.instructions {
		switch ins.cmd {
		case "ENTRYPOINT":
			entrypoint = nil
			if err := json.Unmarshal([]byte(ins.args), &entrypoint); err != nil {
				t.Errorf("line %d: ENTRYPOINT %s is not in exec (JSON) form: %v", ins.line, ins.args, err)
			}
		case "COPY":
			fields := strings.Fields(ins.args)
			for _, f := range fields {
				if from, ok := strings.CutPrefix(f, "--from="); ok && fields[len(fields)-1] == binaryPath {
					builder = from
					copiedBinary = fields[len(fields)-2]
				}
			}
		}
	}
	if len(entrypoint) != 1 || entrypoint[0] != binaryPath {
		t.Errorf("final stage ENTRYPOINT = %q, want [%q]", entrypoint, binaryPath)
	}
	if builder == "" {
		t.Fatalf("final stage does not COPY --from=<build stage> ... %s", binaryPath)
	}

	var build *dockerStage
	for i := range stages[:len(stages)-1] {
		if stages[i].name == builder {
			build = &stages[i]
		}
	}
	if build == nil {
		t.Fatalf("final stage copies from %q, which is not an earlier build stage", builder)
	}
	var goBuild string
	for _, ins := range build.instructions {
		if ins.cmd == "RUN" && strings.Contains(ins.args, "go build") {
			goBuild = ins.args
		}
	}
	if goBuild == "" {
		t.Fatalf("stage %q has no RUN ... go build", builder)
	}
	buildArgs := strings.Fields(goBuild)
	if buildArgs[len(buildArgs)-1] != mainPackage {
		t.Errorf("go build targets %q, want %q", buildArgs[len(buildArgs)-1], mainPackage)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-o " + copiedBinary} {
		if !strings.Contains(goBuild, want) {
			t.Errorf("go build command %q lacks %q", goBuild, want)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(mainPackage))); err != nil || !fi.IsDir() {
		t.Errorf("build target %s is not a directory in the repository (err=%v)", mainPackage, err)
	}
}

func TestLoaderRejectsBrokenCompose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := []struct {
		name, doc, wantErr string
	}{
		{
			name: "depends_on undefined service",
			doc: `services:
  worker:
    image: busybox:1.36
    depends_on:
      ghost:
        condition: service_healthy
`,
			wantErr: "undefined service",
		},
		{
			name: "unknown service attribute",
			doc: `services:
  worker:
    image: busybox:1.36
    helthcheck:
      test: ["CMD", "true"]
`,
			wantErr: "helthcheck",
		},
		{
			name: "invalid depends_on condition",
			doc: `services:
  db:
    image: busybox:1.36
  worker:
    image: busybox:1.36
    depends_on:
      db:
        condition: service_happy
`,
			wantErr: "condition",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := load(dir, filepath.Join(dir, "compose.yml"), []byte(c.doc), map[string]string{})
			if err == nil {
				t.Fatalf("loader accepted an invalid compose document:\n%s", c.doc)
			}
			if !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("loader error = %q, want it to mention %q", err, c.wantErr)
			}
		})
	}

	// Control: the same loader accepts a valid document, so the rejections
	// above are caused by the defects and not by the test setup.
	t.Run("valid control document", func(t *testing.T) {
		t.Parallel()
		doc := `services:
  db:
    image: busybox:1.36
  worker:
    image: busybox:1.36
    depends_on:
      db:
        condition: service_started
`
		if _, err := load(dir, filepath.Join(dir, "compose.yml"), []byte(doc), map[string]string{}); err != nil {
			t.Fatalf("loader rejected a valid compose document: %v", err)
		}
	})
}
