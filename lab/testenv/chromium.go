package testenv

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

var (
	chromiumOnce sync.Once
	chromiumPath string
	chromiumErr  string
)

// chromiumNames are the binaries a headless browser test can drive.
var chromiumNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Chromium returns the path of a headless-capable Chromium for browser
// tests. When none is installed and the tests run as root with apt-get, it
// installs Debian's chromium package (refreshing the package lists once if
// the first attempt fails, as scripts/compose-check.sh does). Without one
// the test is skipped, except under CI=true, where it fails: a browser test
// that cannot run is a failure there.
func Chromium(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium: run without -short")
	}
	chromiumOnce.Do(findOrInstallChromium)
	if chromiumPath == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Chromium for the browser tests (CI=true: a test that cannot run fails): %s", chromiumErr)
		}
		t.Skipf("no Chromium for the browser tests: %s", chromiumErr)
	}
	return chromiumPath
}

func lookChromium() string {
	for _, n := range chromiumNames {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

func findOrInstallChromium() {
	if chromiumPath = lookChromium(); chromiumPath != "" {
		return
	}
	if os.Geteuid() != 0 {
		chromiumErr = "chromium is not installed and installing it needs root (apt-get install chromium)"
		return
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		chromiumErr = "chromium is not installed and there is no apt-get"
		return
	}
	install := func() ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium", "fonts-dejavu-core")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		return cmd.CombinedOutput()
	}
	out, err := install()
	if err != nil {
		// A fresh machine may have no package lists yet.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		upd, _ := exec.CommandContext(ctx, "apt-get", "update", "-qq").CombinedOutput()
		cancel()
		out = append(upd, out...)
		var more []byte
		more, err = install()
		out = append(out, more...)
	}
	if err != nil {
		lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
		chromiumErr = "apt-get install chromium failed: " + string(bytes.Join(lines[max(0, len(lines)-5):], []byte("; ")))
		return
	}
	if chromiumPath = lookChromium(); chromiumPath == "" {
		chromiumErr = "apt-get installed chromium but no chromium binary is on PATH"
	}
}

// ChromiumFlags are the launch flags of headless browser tests: no GPU,
// sandbox, QUIC, first-run, background networking, component updates or
// sync, so a test talks only to the servers it starts.
var ChromiumFlags = []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync"}
