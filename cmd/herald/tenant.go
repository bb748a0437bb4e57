package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/heraldhq/herald/service"
)

// tenantCreate calls the admin API of a running server.
func tenantCreate(ctx context.Context, name string, stdout io.Writer) error {
	cfg, err := service.LoadConfig(os.Getenv, service.Flags{})
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	token := strings.TrimSpace(os.Getenv("HERALD_ADMIN_TOKEN"))
	if token == "" {
		b, err := os.ReadFile(filepath.Join(cfg.DataDir, service.AdminTokenFile))
		if err != nil {
			return fmt.Errorf("admin token: set HERALD_ADMIN_TOKEN or run beside the data dir: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	body, _ := json.Marshal(map[string]string{"name": name})
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+cfg.HTTPAddr+"/v1/admin/tenants", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("is herald serve running on %s? %w", cfg.HTTPAddr, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("admin API answered %s: %s", resp.Status, bytes.TrimSpace(data))
	}
	var t struct{ TenantID, Name, APIKey string }
	if err := json.Unmarshal(data, &t); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "tenant:  %s\nname:    %s\napi key: %s\n(the API key is shown once; store it now)\n", t.TenantID, t.Name, t.APIKey)
	return nil
}
