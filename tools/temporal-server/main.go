// Command temporal-server is a Temporal server built from go.temporal.io/server
// at the version go.mod pins, configured as production runs it: PostgreSQL
// persistence (default and visibility stores in their own databases) and
// several history shards, all services in one process on loopback.
//
// It is the "postgres" engine of hookinbox's tests and benchmarks
// (lab/devenv.StartTemporalPostgres); the dev server of the Temporal
// CLI (SQLite, one shard) stays the default. It is a separate module so the
// server's dependency graph never touches the service's go.mod.
//
//	temporal-server setup --pg 127.0.0.1:5432 --user postgres --db temporal --visibility-db temporal_visibility
//	temporal-server start --pg 127.0.0.1:5432 --user postgres --db temporal --visibility-db temporal_visibility \
//	    --port 7233 --shards 4 --namespace default --search-attribute Provider=Keyword --ready-file /tmp/ready
//
// setup creates the two databases if missing and brings their schemas to
// the version this server ships (the temporal-sql-tool's setup-schema and
// update-schema, from the module's embedded schema files); it is idempotent.
// start runs setup first (unless --skip-setup), starts the server, registers
// the namespace and the search attributes, and then writes --ready-file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/membership/static"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql" // registers postgres12
	"go.temporal.io/server/common/primitives"
	"go.temporal.io/server/temporal"
	"go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

const (
	pluginName       = "postgres12"
	mainSchema       = "postgresql/v12/temporal"
	visibilitySchema = "postgresql/v12/visibility"
	clusterName      = "active"
)

type options struct {
	pg, user, password, db, visDB, adminDB string
	ip                                     string
	port, shards, maxConns                 int
	namespace                              string
	retention                              time.Duration
	logLevel                               string
	readyFile                              string
	skipSetup                              bool
	searchAttrs, dynamic                   multi
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "setup" && os.Args[1] != "start") {
		fmt.Fprintln(os.Stderr, "usage: temporal-server setup|start [flags] (-h for the flags)")
		os.Exit(2)
	}
	cmd := os.Args[1]
	var o options
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	fs.StringVar(&o.pg, "pg", "127.0.0.1:5432", "PostgreSQL host:port")
	fs.StringVar(&o.user, "user", "postgres", "PostgreSQL user (creates the databases in setup)")
	fs.StringVar(&o.password, "password", "", "PostgreSQL password")
	fs.StringVar(&o.db, "db", "temporal", "database of the default store (executions, shards, namespaces)")
	fs.StringVar(&o.visDB, "visibility-db", "temporal_visibility", "database of the visibility store")
	fs.StringVar(&o.adminDB, "admin-db", "postgres", "existing database to connect to when creating the two")
	fs.StringVar(&o.ip, "ip", "127.0.0.1", "address every service binds to")
	fs.IntVar(&o.port, "port", 7233, "frontend gRPC port")
	fs.IntVar(&o.shards, "shards", 4, "history shards (fixed for the life of the databases)")
	fs.IntVar(&o.maxConns, "max-conns", 10, "connection pool size per store and service (4 services, 2 stores)")
	fs.StringVar(&o.namespace, "namespace", "default", "namespace registered at start")
	fs.DurationVar(&o.retention, "retention", 24*time.Hour, "retention of the namespace's closed workflows")
	fs.StringVar(&o.logLevel, "log-level", "warn", "server log level: debug, info, warn, error")
	fs.StringVar(&o.readyFile, "ready-file", "", "written once the namespace and search attributes are registered")
	fs.BoolVar(&o.skipSetup, "skip-setup", false, "start: do not create or update the schemas first")
	fs.Var(&o.searchAttrs, "search-attribute", "NAME=TYPE (Keyword, Int, …) registered at start; repeatable")
	fs.Var(&o.dynamic, "dynamic-config-value", "KEY=VALUE (VALUE as JSON, else a string); repeatable")
	_ = fs.Parse(os.Args[2:])

	logger := log.NewZapLogger(log.BuildZapLogger(log.Config{Level: o.logLevel, Stdout: true, Format: "console"}))
	var err error
	switch cmd {
	case "setup":
		err = setup(o, logger)
	case "start":
		err = start(o, logger)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "temporal-server:", err)
		os.Exit(1)
	}
}

func (o options) sql(db string) *config.SQL {
	return &config.SQL{
		PluginName: pluginName, ConnectAddr: o.pg, ConnectProtocol: "tcp",
		User: o.user, Password: o.password, DatabaseName: db,
		MaxConns: 20, MaxIdleConns: 20, MaxConnLifetime: time.Hour,
	}
}

// setup creates both databases if missing and brings each schema to the
// newest version embedded in the server module: the temporal-sql-tool's
// create-database, setup-schema -v 0.0 (only on a database without the
// version tables) and update-schema.
func setup(o options, logger log.Logger) error {
	for _, s := range []struct{ db, schema string }{{o.db, mainSchema}, {o.visDB, visibilitySchema}} {
		if err := sqltool.DoCreateDatabase(o.sql(s.db), o.adminDB, logger); err != nil {
			return fmt.Errorf("create database %s: %w", s.db, err)
		}
		conn, err := sqltool.NewConnection(o.sql(s.db), logger)
		if err != nil {
			return fmt.Errorf("connect to %s: %w", s.db, err)
		}
		if _, err := conn.ReadSchemaVersion(); err != nil {
			err = schema.NewSetupSchemaTask(conn, &schema.SetupConfig{InitialVersion: "0.0"}, logger).Run()
			if err != nil {
				conn.Close()
				return fmt.Errorf("setup schema of %s: %w", s.db, err)
			}
		}
		err = schema.NewUpdateSchemaTask(conn, &schema.UpdateConfig{DBName: s.db, SchemaName: s.schema}, logger).Run()
		v, _ := conn.ReadSchemaVersion()
		conn.Close()
		if err != nil {
			return fmt.Errorf("update schema of %s: %w", s.db, err)
		}
		fmt.Printf("temporal-server: database %s at schema %s (%s)\n", s.db, v, s.schema)
	}
	return nil
}

func freePort(ip string) (int, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func start(o options, logger log.Logger) error {
	if o.shards < 1 || o.shards > 1<<14 {
		return fmt.Errorf("--shards %d: want 1 to 16384", o.shards)
	}
	if !o.skipSetup {
		if err := setup(o, logger); err != nil {
			return err
		}
	}
	frontend := net.JoinHostPort(o.ip, strconv.Itoa(o.port))
	httpPort, err := freePort(o.ip)
	if err != nil {
		return err
	}
	services := map[string]config.Service{}
	hosts := map[primitives.ServiceName]static.Hosts{}
	for _, name := range []primitives.ServiceName{primitives.FrontendService, primitives.HistoryService,
		primitives.MatchingService, primitives.WorkerService} {
		var svc config.Service
		svc.RPC.BindOnIP = o.ip
		if name == primitives.FrontendService {
			svc.RPC.GRPCPort, svc.RPC.HTTPPort = o.port, httpPort
		} else if svc.RPC.GRPCPort, err = freePort(o.ip); err != nil {
			return err
		}
		services[string(name)] = svc
		hosts[name] = static.SingleLocalHost(net.JoinHostPort(o.ip, strconv.Itoa(svc.RPC.GRPCPort)))
	}

	var conf config.Config
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = o.ip
	conf.Persistence.DefaultStore = "postgres-default"
	conf.Persistence.VisibilityStore = "postgres-visibility"
	conf.Persistence.NumHistoryShards = int32(o.shards) //nolint:gosec // checked in range at start
	conf.Persistence.DataStores = map[string]config.DataStore{
		"postgres-default":    {SQL: o.sql(o.db)},
		"postgres-visibility": {SQL: o.sql(o.visDB)},
	}
	conf.ClusterMetadata = &cluster.Config{
		FailoverVersionIncrement: 10,
		MasterClusterName:        clusterName,
		CurrentClusterName:       clusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{clusterName: {
			Enabled: true, InitialFailoverVersion: 1, RPCAddress: frontend,
			HTTPAddress: net.JoinHostPort(o.ip, strconv.Itoa(httpPort)),
		}},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Services = services
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = frontend

	dyn := dynamicconfig.StaticClient{}
	for _, kv := range o.dynamic {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("--dynamic-config-value %q: want KEY=VALUE", kv)
		}
		var val any
		if json.Unmarshal([]byte(v), &val) != nil {
			val = v
		}
		dyn[dynamicconfig.Key(k)] = val
	}

	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return err
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, logger)
	if err != nil {
		return err
	}
	srv, err := temporal.NewServer(
		temporal.WithConfig(&conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(logger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dyn),
	)
	if err != nil {
		return fmt.Errorf("build server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return fmt.Errorf("start server: %w", err)
	}
	defer func() { _ = srv.Stop() }()

	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	if err := register(ctx, o, frontend); err != nil {
		return err
	}
	if o.readyFile != "" {
		if err := os.WriteFile(o.readyFile, []byte(frontend+"\n"), 0o600); err != nil {
			return err
		}
	}
	fmt.Printf("temporal-server: ready on %s (%d history shards, PostgreSQL %s, databases %s and %s)\n",
		frontend, o.shards, o.pg, o.db, o.visDB)
	<-ctx.Done()
	return nil
}

// register creates the namespace and adds the missing search attributes
// through the frontend, retrying while the services come up, then waits
// for the namespace cache to see them (system.namespaceCacheRefreshInterval,
// 2 s by default) so the first workflow started with them is accepted.
func register(ctx context.Context, o options, frontend string) error {
	conn, err := grpc.NewClient(frontend, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	wf := workflowservice.NewWorkflowServiceClient(conn)
	op := operatorservice.NewOperatorServiceClient(conn)

	want := map[string]enumspb.IndexedValueType{}
	for _, kv := range o.searchAttrs {
		name, typ, _ := strings.Cut(kv, "=")
		v, err := enumspb.IndexedValueTypeFromString(typ)
		if err != nil {
			return fmt.Errorf("--search-attribute %q: %w", kv, err)
		}
		want[name] = v
	}
	deadline := time.Now().Add(2 * time.Minute)
	retry := func(what string, f func(context.Context) error) error {
		tries := 0
		for {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := f(cctx)
			cancel()
			if err == nil {
				return nil
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			if tries++; tries%20 == 0 {
				fmt.Fprintf(os.Stderr, "temporal-server: %s: still trying: %v\n", what, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	err = retry("register namespace "+o.namespace, func(ctx context.Context) error {
		_, err := wf.RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: o.namespace, WorkflowExecutionRetentionPeriod: durationpb.New(o.retention),
		})
		// The raw gRPC client returns a status; the SDK's conversion to
		// serviceerror types is done here by hand.
		var exists *serviceerror.NamespaceAlreadyExists
		if err != nil && errors.As(serviceerror.FromStatus(status.Convert(err)), &exists) {
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	err = retry("search attributes", func(ctx context.Context) error {
		resp, err := op.ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: o.namespace})
		if err != nil {
			return err
		}
		missing := map[string]enumspb.IndexedValueType{}
		for n, t := range want {
			if _, ok := resp.GetCustomAttributes()[n]; !ok {
				missing[n] = t
			}
		}
		if len(missing) == 0 {
			return nil
		}
		names := make([]string, 0, len(missing))
		for n := range missing {
			names = append(names, n)
		}
		sort.Strings(names)
		_, err = op.AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace: o.namespace, SearchAttributes: missing,
		})
		if err == nil {
			err = fmt.Errorf("added %s; checking", strings.Join(names, ", "))
		}
		return err
	})
	if err != nil {
		return err
	}
	// The history and matching services read namespaces from their cache.
	err = retry("describe namespace "+o.namespace, func(ctx context.Context) error {
		_, err := wf.DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: o.namespace})
		return err
	})
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(3 * time.Second):
	}
	return nil
}
