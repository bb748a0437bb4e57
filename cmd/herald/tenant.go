package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/service"
)

// adminClient calls the admin API of a running server: its address and
// token come from the same flags and HERALD_* environment as serve's.
type adminClient struct {
	addr, token string
}

// newAdminClient parses the tool flags (--http, --data) of an admin
// command, of which want positional arguments must remain.
func newAdminClient(name string, args []string, want int) (*adminClient, []string, error) {
	var f service.Flags
	fs := newFlagSet(name)
	fs.StringVar(&f.HTTPAddr, "http", "", "REST API address of the running server (HERALD_HTTP_ADDR)")
	fs.StringVar(&f.DataDir, "data", "", "data directory holding admin.token (HERALD_DATA_DIR)")
	if err := fs.Parse(args); err != nil || fs.NArg() != want {
		return nil, nil, fmt.Errorf("%w: %s: %v", errUsage, name, err)
	}
	cfg, err := toolConfig(f)
	if err != nil {
		return nil, nil, err
	}
	token, err := adminToken(cfg)
	if err != nil {
		return nil, nil, err
	}
	return &adminClient{addr: localAddr(cfg.HTTPAddr), token: token}, fs.Args(), nil
}

// call sends one admin request and decodes a 2xx answer into out (nil:
// no body expected). Another status is an error carrying the API's
// message, never the token.
func (c *adminClient) call(ctx context.Context, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.addr+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("is herald serve running on %s? %w", c.addr, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code, Message string }
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
			return fmt.Errorf("admin API answered %s: %s (%s)", resp.Status, e.Error.Message, e.Error.Code)
		}
		return fmt.Errorf("admin API answered %s", resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// each walks every page of an admin list, calling row for each item.
func each[T any](ctx context.Context, c *adminClient, path string, row func(T)) error {
	cursor := ""
	for {
		var page struct {
			Data       []T     `json:"data"`
			NextCursor *string `json:"nextCursor"`
		}
		q := url.Values{"limit": {"500"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if err := c.call(ctx, http.MethodGet, path+"?"+q.Encode(), nil, &page); err != nil {
			return err
		}
		for _, item := range page.Data {
			row(item)
		}
		if page.NextCursor == nil || *page.NextCursor == "" {
			return nil
		}
		cursor = *page.NextCursor
	}
}

// tenantCmd is `herald tenant create NAME` and `herald tenant list`.
func tenantCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "create":
		c, rest, err := newAdminClient("tenant create", args[1:], 1)
		if err != nil {
			return err
		}
		var t struct{ TenantID, Name, APIKey string }
		if err := c.call(ctx, http.MethodPost, "/v1/admin/tenants", map[string]string{"name": rest[0]}, &t); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tenant:  %s\nname:    %s\napi key: %s\n(the API key is shown once; store it now)\n", t.TenantID, t.Name, t.APIKey)
		return nil
	case "list":
		c, _, err := newAdminClient("tenant list", args[1:], 0)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TENANT\tCREATED\tNAME")
		err = each(ctx, c, "/v1/admin/tenants", func(t struct{ TenantID, Name, CreatedAt string }) {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.TenantID, t.CreatedAt, t.Name)
		})
		if err != nil {
			return err
		}
		return tw.Flush()
	}
	return errUsage
}

// keyCmd is `herald key create|list TENANT` and `herald key revoke TENANT
// PREFIX`: the tenant's API keys through the admin API, for a tenant
// whose every key is lost.
func keyCmd(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errUsage
	}
	switch args[0] {
	case "create":
		c, rest, err := newAdminClient("key create", args[1:], 1)
		if err != nil {
			return err
		}
		var k struct{ APIKey, Prefix string }
		if err := c.call(ctx, http.MethodPost, "/v1/admin/tenants/"+url.PathEscape(rest[0])+"/api-keys", struct{}{}, &k); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "prefix:  %s\napi key: %s\n(the API key is shown once; store it now)\n", k.Prefix, k.APIKey)
		return nil
	case "list":
		c, rest, err := newAdminClient("key list", args[1:], 1)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PREFIX\tCREATED")
		err = each(ctx, c, "/v1/admin/tenants/"+url.PathEscape(rest[0])+"/api-keys", func(k struct{ Prefix, CreatedAt string }) {
			fmt.Fprintf(tw, "%s\t%s\n", k.Prefix, k.CreatedAt)
		})
		if err != nil {
			return err
		}
		return tw.Flush()
	case "revoke":
		c, rest, err := newAdminClient("key revoke", args[1:], 2)
		if err != nil {
			return err
		}
		if err := c.call(ctx, http.MethodDelete, "/v1/admin/tenants/"+url.PathEscape(rest[0])+"/api-keys/"+url.PathEscape(rest[1]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", rest[1])
		return nil
	}
	return errUsage
}
