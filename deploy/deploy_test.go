// Package deploy holds the container deployment: the Dockerfile at the
// repository's root and compose.yaml here. Its tests read both.
package deploy

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// dockerfile is the Dockerfile's instructions, continuation lines joined,
// comments dropped.
func dockerfile(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	cur := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		out = append(out, cur+line)
		cur = ""
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDockerfile lints the image: every base pinned by digest, a static
// build, a final USER that is not root, a HEALTHCHECK on /healthz through
// the binary (the base has no shell), and the data directory a volume.
func TestDockerfile(t *testing.T) {
	pinned := regexp.MustCompile(`^FROM\s+\S+@sha256:[0-9a-f]{64}(\s+AS\s+\S+)?$`)
	var froms int
	var user, health, volume string
	var static bool
	for _, ins := range dockerfile(t) {
		word, rest, _ := strings.Cut(ins, " ")
		switch strings.ToUpper(word) {
		case "FROM":
			froms++
			user = "" // each stage starts as root
			if !pinned.MatchString(ins) {
				t.Errorf("base image not pinned by digest: %s", ins)
			}
		case "USER":
			user = strings.TrimSpace(rest)
		case "HEALTHCHECK":
			health = rest
		case "VOLUME":
			volume = rest
		case "RUN":
			if strings.Contains(rest, "go build") && strings.Contains(rest, "CGO_ENABLED=0") {
				static = true
			}
		}
	}
	if froms < 2 {
		t.Errorf("%d FROM: not a multi-stage build", froms)
	}
	if name, _, _ := strings.Cut(user, ":"); name == "" || name == "root" || name == "0" {
		t.Errorf("the image runs as %q: want a non-root USER in the last stage", user)
	}
	if !strings.Contains(health, "herald") || !strings.Contains(health, "healthcheck") {
		t.Errorf("HEALTHCHECK %q does not run herald healthcheck", health)
	}
	if !strings.Contains(volume, "/data") {
		t.Errorf("VOLUME %q: the data directory is not a volume", volume)
	}
	if !static {
		t.Error("no CGO_ENABLED=0 go build: the binary is not static")
	}
}

// TestDockerBuild builds the image where Docker is at hand (CI); it is
// skipped elsewhere and in -short.
func TestDockerBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skip("docker daemon unreachable")
	}
	out, err := exec.Command("docker", "build", "-q", "-t", "herald:test", "..").CombinedOutput()
	if err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
}

type composeFile struct {
	Services map[string]struct {
		Image       string
		Build       any
		Command     []string
		Environment map[string]string
		Volumes     []string
		Healthcheck struct {
			Test []string
		}
		DependsOn       map[string]struct{ Condition string } `yaml:"depends_on"`
		StopGracePeriod string                                `yaml:"stop_grace_period"`
	}
	Volumes map[string]any
}

// TestCompose: deploy/compose.yaml parses and runs the production layout
// of docs/operations.md: three NATS servers of the official image with
// JetStream in one cluster, and two herald serve processes on all three,
// with three replicas, shared secrets and a data volume each.
func TestCompose(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	var nats, herald []string
	for name, s := range c.Services {
		switch {
		case strings.HasPrefix(s.Image, "nats:"):
			nats = append(nats, name)
			args := strings.Join(s.Command, " ")
			for _, want := range []string{"--jetstream", "--cluster_name herald", "--routes", "--name " + name, "--store_dir"} {
				if !strings.Contains(args, want) {
					t.Errorf("%s: command lacks %s: %s", name, want, args)
				}
			}
		case s.Build != nil || strings.HasPrefix(s.Image, "herald"):
			herald = append(herald, name)
			env := s.Environment
			if urls := strings.Split(env["HERALD_NATS_URL"], ","); len(urls) != 3 {
				t.Errorf("%s: HERALD_NATS_URL %q does not name the three servers", name, env["HERALD_NATS_URL"])
			}
			if env["HERALD_REPLICAS"] != "3" {
				t.Errorf("%s: HERALD_REPLICAS %q, want 3", name, env["HERALD_REPLICAS"])
			}
			for _, k := range []string{"HERALD_MASTER_KEY", "HERALD_ADMIN_TOKEN", "HERALD_INTERNAL_TOKEN", "HERALD_DATA_DIR"} {
				if env[k] == "" {
					t.Errorf("%s: %s is not set", name, k)
				}
			}
			if len(s.Volumes) != 1 {
				t.Errorf("%s: volumes %v, want its own data volume", name, s.Volumes)
			}
			// What herald version reports: the build args make build's
			// -ldflags set, from the environment.
			build, _ := s.Build.(map[string]any)
			args, _ := build["args"].(map[string]any)
			if build["context"] != ".." || !strings.Contains(fmt.Sprint(args["VERSION"]), "${HERALD_VERSION") ||
				!strings.Contains(fmt.Sprint(args["COMMIT"]), "${HERALD_COMMIT") {
				t.Errorf("%s: build %v does not pass VERSION and COMMIT from HERALD_VERSION and HERALD_COMMIT", name, s.Build)
			}
			// It starts once every NATS server is healthy.
			for _, n := range []string{"nats-1", "nats-2", "nats-3"} {
				if s.DependsOn[n].Condition != "service_healthy" {
					t.Errorf("%s: depends_on %v: want %s with condition service_healthy", name, s.DependsOn, n)
				}
			}
			// Its grace period outlasts serve's drain.
			grace, err := time.ParseDuration(s.StopGracePeriod)
			if drain := serveDrain(t); err != nil || grace <= drain {
				t.Errorf("%s: stop_grace_period %q, want more than herald serve's drain of %s", name, s.StopGracePeriod, drain)
			}
		}
	}
	if len(nats) != 3 || len(herald) != 2 {
		t.Fatalf("services: NATS %v, herald %v; want 3 and 2", nats, herald)
	}
	for _, name := range nats {
		s := c.Services[name]
		test := strings.Join(s.Healthcheck.Test, " ")
		if !strings.Contains(test, ":8222/healthz") || !strings.Contains(strings.Join(s.Command, " "), "--http_port 8222") {
			t.Errorf("%s: healthcheck %q does not ask the monitoring port's /healthz (--http_port 8222)", name, test)
		}
		// The default nats image is scratch: a healthcheck needs the
		// alpine variant's shell tools.
		if len(s.Healthcheck.Test) > 1 && s.Healthcheck.Test[0] == "CMD" && !strings.HasSuffix(s.Image, "-alpine") {
			t.Errorf("%s: image %s has no %s for its healthcheck", name, s.Image, s.Healthcheck.Test[1])
		}
	}
}

// serveDrain is how long herald serve lets requests in flight finish on
// SIGTERM (cmd/herald/serve.go).
func serveDrain(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("../cmd/herald/serve.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`shutdownCtx, cancel := context\.WithTimeout\(context\.Background\(\), (\d+)\s*\*\s*time\.Second\)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("cmd/herald/serve.go: the shutdown timeout was not found")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return time.Duration(n) * time.Second
}

// TestDockerignore: the build context (the repository, see compose.yaml)
// leaves out every .env, deploy/.env with the cluster's secrets included,
// and keeps what the build copies.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	for path, want := range map[string]bool{
		".env": true, "deploy/.env": true, "examples/typescript/.env": true, ".git/config": true,
		"herald-data/projections.db": true, "sdk/typescript/node_modules/typescript/package.json": true,
		"go.mod": false, "cmd/herald/main.go": false, "deploy/compose.yaml": false, "Dockerfile": false,
		"consoleui/console.js": false,
	} {
		if got := dockerIgnores(patterns, path); got != want {
			t.Errorf("%s: ignored %v, want %v (patterns %q)", path, got, want, patterns)
		}
	}
}

// dockerIgnores reports whether .dockerignore patterns leave path out of
// the build context, as Docker reads them: Go's filepath.Match per path
// element, ** for any number of directories, a pattern matching a
// directory leaves out all below it, the last matching pattern wins, and
// ! makes an exception. (Character classes are not needed here.)
func dockerIgnores(patterns []string, path string) bool {
	ignored := false
	for _, p := range patterns {
		exception := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(strings.TrimPrefix(p, "!"))), "/")
		var re strings.Builder
		re.WriteString("^")
		for i := 0; i < len(p); i++ {
			switch {
			case strings.HasPrefix(p[i:], "**/"):
				re.WriteString("(.*/)?")
				i += 2
			case strings.HasPrefix(p[i:], "**"):
				re.WriteString(".*")
				i++
			case p[i] == '*':
				re.WriteString("[^/]*")
			case p[i] == '?':
				re.WriteString("[^/]")
			default:
				re.WriteString(regexp.QuoteMeta(p[i : i+1]))
			}
		}
		re.WriteString("(/.*)?$")
		if regexp.MustCompile(re.String()).MatchString(path) {
			ignored = !exception
		}
	}
	return ignored
}
