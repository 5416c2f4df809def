package main

import (
	"context"
	"fmt"
	"regexp"

	"github.com/spf13/cobra"

	"github.com/yarnfed/yarnfed/statestore/client"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// appIDPattern is the text form Hadoop's ApplicationId.fromString accepts:
// application_<cluster timestamp>_<sequence number>.
var appIDPattern = regexp.MustCompile(`^application_[0-9]{1,19}_[0-9]{1,10}$`)

func checkAppID(id string) error {
	if !appIDPattern.MatchString(id) {
		return fmt.Errorf("%w: %q is not an application id (application_<clusterTimestamp>_<sequence>, e.g. application_1440536969523_0001)", client.ErrInvalidArgument, id)
	}
	return nil
}

func (c *ctl) newAppCmd() *cobra.Command {
	g := newGroup("app", "Application homes: which sub-cluster each application lives in (yarn routeradmin -application)", "apps", "application")
	g.AddCommand(c.newAppHomeCmd(), c.newAppListCmd(), c.newAppDeleteCmd())
	return g
}

type appView struct {
	ApplicationID    string `json:"applicationId"`
	HomeSubClusterID string `json:"homeSubCluster"`
	CreateTime       string `json:"createTime,omitempty"`
}

func appViewOf(h *pb.ApplicationHome) appView {
	return appView{h.GetApplicationId(), h.GetHomeSubClusterId(), formatMs(h.GetCreateTimeMs())}
}

func (c *ctl) printApps(homes []*pb.ApplicationHome) error {
	views := make([]appView, 0, len(homes))
	for _, h := range homes {
		views = append(views, appViewOf(h))
	}
	if c.output == "json" {
		return writeJSON(c.out, views)
	}
	t := newTable(c.out, "APPLICATION", "HOME", "CREATED")
	for _, v := range views {
		t.row(v.ApplicationID, v.HomeSubClusterID, v.CreateTime)
	}
	return t.flush()
}

func (c *ctl) newAppHomeCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "home APP_ID",
		Short:   "Show an application's home sub-cluster",
		Example: `  yarnfedctl app home application_1440536969523_0001`,
		Args:    exactArgs("APP_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkAppID(args[0]); err != nil {
				return err
			}
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				h, err := cl.GetApplicationHome(ctx, args[0], false)
				if err != nil {
					return err
				}
				return c.printApps([]*pb.ApplicationHome{h})
			})
		},
	}
}

func (c *ctl) newAppListCmd() *cobra.Command {
	var sc string
	var limit int
	cmd := &cobra.Command{
		Use:     "list [--subcluster SC] [--limit N]",
		Aliases: []string{"ls"},
		Short:   "List application homes, newest first",
		Example: `  yarnfedctl app list --subcluster SC-1 --limit 20`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if limit < 0 {
				return usagef("--limit %d: must be 0 (all) or more", limit)
			}
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				var homes []*pb.ApplicationHome
				var token []byte
				for {
					q := client.ListQuery{SubClusterID: sc, PageToken: token}
					if limit > 0 {
						q.Limit = limit - len(homes)
					}
					page, next, err := cl.ListApplicationHomes(ctx, q)
					if err != nil {
						return err
					}
					homes = append(homes, page...)
					token = next
					if len(next) == 0 || (limit > 0 && len(homes) >= limit) {
						break
					}
				}
				if limit > 0 && len(homes) > limit {
					homes = homes[:limit]
				}
				if err := c.printApps(homes); err != nil {
					return err
				}
				if len(token) > 0 {
					fmt.Fprintf(c.err, "showing the newest %d; --limit 0 lists all\n", len(homes))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&sc, "subcluster", "", "only applications whose home is this sub-cluster")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many rows, 0 for all")
	return cmd
}

func (c *ctl) newAppDeleteCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "delete APP_ID --yes",
		Short: "Delete an application's home row (yarn routeradmin -application --delete)",
		Long: `Delete an application's home row from the state store. The application itself is untouched;
routers that need its home again ask every active sub-cluster and store the answer. Use it to clean
rows of applications that no longer exist.`,
		Example: `  yarnfedctl app delete application_1440536969523_0001 --yes`,
		Args:    exactArgs("APP_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !yes {
				return usagef("refusing to delete the home of %s without --yes", args[0])
			}
			if err := checkAppID(args[0]); err != nil {
				return err
			}
			return c.withStore(cmd, func(ctx context.Context, cl *client.Client) error {
				if err := cl.DeleteApplicationHome(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(c.out, "deleted the home of %s\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm the deletion")
	return cmd
}
