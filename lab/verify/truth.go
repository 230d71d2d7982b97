package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hookinbox/hookinbox/lab/simulator"
)

// ReadTruth decodes the JSON of GET /_sim/truth.
func ReadTruth(r io.Reader) (simulator.Truth, error) {
	var t simulator.Truth
	if err := json.NewDecoder(r).Decode(&t); err != nil {
		return t, fmt.Errorf("decode the simulator's truth: %w", err)
	}
	return t, nil
}

// FetchTruth gets the ground truth of the simulator serving at baseURL
// (e.g. http://127.0.0.1:12111, what `hookinbox-lab simulate` prints).
func FetchTruth(ctx context.Context, client *http.Client, baseURL string) (simulator.Truth, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(baseURL, "/")+"/_sim/truth", nil)
	if err != nil {
		return simulator.Truth{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return simulator.Truth{}, fmt.Errorf("get the simulator's truth: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return simulator.Truth{}, fmt.Errorf("get the simulator's truth: %s", resp.Status)
	}
	return ReadTruth(resp.Body)
}
