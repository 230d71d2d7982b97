package devenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ModulePath is the module whose root FindRoot looks for.
const ModulePath = "github.com/hookinbox/hookinbox"

// FindRoot walks up from the working directory to the folder holding
// hookinbox's go.mod. HOOKINBOX_ROOT overrides it.
func FindRoot() (string, error) {
	if r := os.Getenv("HOOKINBOX_ROOT"); r != "" {
		return filepath.Abs(r)
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isModuleRoot(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("hookinbox project root not found: run from inside the repository or set HOOKINBOX_ROOT")
		}
		dir = parent
	}
}

func isModuleRoot(gomod string) bool {
	f, err := os.Open(gomod)
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if strings.HasPrefix(line, "module ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "module ")) == ModulePath
		}
	}
	return false
}

// DataDir is the gitignored folder holding local state.
func DataDir(root string) string { return filepath.Join(root, ".data") }

// ToolsDir is the gitignored folder holding built tools.
func ToolsDir(root string) string { return filepath.Join(root, ".tools") }

func mkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}
