package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/heraldhq/herald/service"
)

// adminClient calls the admin API of a running server: its address and
// token come from the same flags and HERALD_* environment as serve's.
type adminClient struct {
	addr, token string
}

// adminFlags declares the flags of an admin command on fs: the server's
// --http and the --data dir holding its admin token.
func adminFlags(fs *flag.FlagSet) *service.Flags {
	var f service.Flags
	fs.StringVar(&f.HTTPAddr, "http", "", "REST API address of the running server (HERALD_HTTP_ADDR)")
	fs.StringVar(&f.DataDir, "data", "", "data directory holding admin.token, unless HERALD_ADMIN_TOKEN is set (HERALD_DATA_DIR)")
	return &f
}

// adminCmd declares the admin flags on fs and returns the action that
// calls do with a client of the server they name.
func adminCmd(fs *flag.FlagSet, do func(ctx context.Context, c *adminClient, args []string, stdout io.Writer) error) action {
	f := adminFlags(fs)
	return func(ctx context.Context, args []string, stdout, _ io.Writer) error {
		cfg, err := toolConfig(*f)
		if err != nil {
			return err
		}
		token, err := adminToken(cfg)
		if err != nil {
			return err
		}
		return do(ctx, &adminClient{addr: localAddr(cfg.HTTPAddr), token: token}, args, stdout)
	}
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
	base := "http://" + c.addr
	if strings.HasPrefix(c.addr, "http://") || strings.HasPrefix(c.addr, "https://") {
		base = strings.TrimSuffix(c.addr, "/") // a URL: herald check reaches a server elsewhere
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
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
			Error struct {
				Code, Message string
				Details       []struct{ Field, Problem string }
			}
		}
		if json.Unmarshal(data, &e) == nil && e.Error.Code != "" {
			msg := e.Error.Message
			for _, d := range e.Error.Details {
				msg += "; " + d.Field + " " + d.Problem
			}
			return fmt.Errorf("the API answered %s: %s (%s)", resp.Status, msg, e.Error.Code)
		}
		return fmt.Errorf("the API answered %s", resp.Status)
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

// tenantCreateCmd is `herald tenant create NAME`.
func tenantCreateCmd(fs *flag.FlagSet) action {
	return adminCmd(fs, func(ctx context.Context, c *adminClient, args []string, stdout io.Writer) error {
		var t struct{ TenantID, Name, APIKey string }
		if err := c.call(ctx, http.MethodPost, "/v1/admin/tenants", map[string]string{"name": args[0]}, &t); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "tenant:  %s\nname:    %s\napi key: %s\n(the API key is shown once; store it now)\n", t.TenantID, t.Name, t.APIKey)
		return nil
	})
}

// tenantListCmd is `herald tenant list`.
func tenantListCmd(fs *flag.FlagSet) action {
	return adminCmd(fs, func(ctx context.Context, c *adminClient, _ []string, stdout io.Writer) error {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TENANT\tCREATED\tNAME")
		err := each(ctx, c, "/v1/admin/tenants", func(t struct{ TenantID, Name, CreatedAt string }) {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", t.TenantID, t.CreatedAt, t.Name)
		})
		if err != nil {
			return err
		}
		return tw.Flush()
	})
}

// keyCreateCmd is `herald key create TENANT`: another API key, for a
// tenant whose every key is lost.
func keyCreateCmd(fs *flag.FlagSet) action {
	return adminCmd(fs, func(ctx context.Context, c *adminClient, args []string, stdout io.Writer) error {
		var k struct{ APIKey, Prefix string }
		if err := c.call(ctx, http.MethodPost, "/v1/admin/tenants/"+url.PathEscape(args[0])+"/api-keys", struct{}{}, &k); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "prefix:  %s\napi key: %s\n(the API key is shown once; store it now)\n", k.Prefix, k.APIKey)
		return nil
	})
}

// keyListCmd is `herald key list TENANT`.
func keyListCmd(fs *flag.FlagSet) action {
	return adminCmd(fs, func(ctx context.Context, c *adminClient, args []string, stdout io.Writer) error {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PREFIX\tCREATED")
		err := each(ctx, c, "/v1/admin/tenants/"+url.PathEscape(args[0])+"/api-keys", func(k struct{ Prefix, CreatedAt string }) {
			fmt.Fprintf(tw, "%s\t%s\n", k.Prefix, k.CreatedAt)
		})
		if err != nil {
			return err
		}
		return tw.Flush()
	})
}

// keyRevokeCmd is `herald key revoke TENANT PREFIX`.
func keyRevokeCmd(fs *flag.FlagSet) action {
	return adminCmd(fs, func(ctx context.Context, c *adminClient, args []string, stdout io.Writer) error {
		if err := c.call(ctx, http.MethodDelete, "/v1/admin/tenants/"+url.PathEscape(args[0])+"/api-keys/"+url.PathEscape(args[1]), nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked %s\n", args[1])
		return nil
	})
}
