package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/droverhq/drover/internal/server"
)

// serviceAccountDir is where a pod's service account token, CA and namespace are mounted
// (tests point it elsewhere).
var serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// kubeOptions is the one way every command reaches the management cluster: kubectl's flags
// (--kubeconfig, --context, --user, --server, --token, TLS files, --as, -n, --request-timeout)
// bound once on the root command (not --cluster: in drover that names a fleet Cluster), $KUBECONFIG honoured, and the in-cluster
// service account when no kubeconfig or --server is given.
type kubeOptions struct {
	flags *genericclioptions.ConfigFlags
	// allNamespaces is -A on list commands.
	allNamespaces bool
	// selector is -l on list commands.
	selector string
}

func newKubeOptions() *kubeOptions {
	return &kubeOptions{flags: &genericclioptions.ConfigFlags{
		KubeConfig:       ptr.To(""),
		Context:          ptr.To(""),
		AuthInfoName:     ptr.To(""),
		Namespace:        ptr.To(""),
		Impersonate:      ptr.To(""),
		ImpersonateGroup: ptr.To([]string{}),
		ImpersonateUID:   ptr.To(""),
		Timeout:          ptr.To("0"),
		APIServer:        ptr.To(""),
		TLSServerName:    ptr.To(""),
		Insecure:         ptr.To(false),
		CertFile:         ptr.To(""),
		KeyFile:          ptr.To(""),
		CAFile:           ptr.To(""),
		BearerToken:      ptr.To(""),
	}}
}

func (k *kubeOptions) addFlags(cmd *cobra.Command) {
	k.flags.AddFlags(cmd.PersistentFlags())
	f := cmd.PersistentFlags()
	f.Lookup("kubeconfig").Usage = "kubeconfig of the management cluster (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account)"
	f.Lookup("namespace").Usage = "namespace (default: the kubeconfig context's, else the service account's, else default; drover-default for fleet objects)"
}

// addListFlags binds -A/--all-namespaces and -l/--selector on a list command.
func (k *kubeOptions) addListFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&k.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	cmd.Flags().StringVarP(&k.selector, "selector", "l", "", "label selector, e.g. env=prod,tier in (a,b)")
}

// kubeTarget is the resolved management cluster.
type kubeTarget struct {
	Config *rest.Config
	// Namespace is -n, else the context's, else the service account's, else "".
	Namespace string
	// Source says where the config came from, for messages: "--kubeconfig PATH", "$KUBECONFIG
	// (PATH)", "PATH" (the default file) or "the in-cluster service account".
	Source string
	// Context is the kubeconfig context used ("" in-cluster).
	Context string
	// Explicit: the cluster was chosen by --kubeconfig, $KUBECONFIG or a pod's service account
	// (not just by a ~/.kube/config lying around).
	Explicit bool
}

const inClusterSource = "the in-cluster service account"

// errNoKubeconfig: neither a kubeconfig nor an in-cluster service account was found.
var errNoKubeconfig = errors.New("no kubeconfig: pass --kubeconfig, set $KUBECONFIG, or create ~/.kube/config (drover server on an embedded control plane writes one in its data dir: .drover/kubeconfig under make run)")

// resolve finds the management cluster the kubectl way: --kubeconfig, else $KUBECONFIG, else
// ~/.kube/config; with none of these, the pod's service account (KUBERNETES_SERVICE_HOST and the
// token in serviceAccountDir). --context, --user and -n override the file's.
func (k *kubeOptions) resolve() (*kubeTarget, error) {
	explicit := *k.flags.KubeConfig
	if explicit != "" {
		if _, err := os.Stat(explicit); err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: file not found: pass the path of a kubeconfig file", explicit)
		}
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); explicit == "" && env != "" && !anyExists(filepath.SplitList(env)) {
		return nil, fmt.Errorf("$KUBECONFIG is %s, and no such file exists: fix or unset it (or pass --kubeconfig)", env)
	}
	loader := k.flags.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	server := *k.flags.APIServer
	if len(raw.Contexts) == 0 && len(raw.Clusters) == 0 && explicit == "" && server == "" {
		if *k.flags.Context != "" {
			return nil, fmt.Errorf("--context %s: no kubeconfig found to take it from", *k.flags.Context)
		}
		cfg, ns, err := inClusterConfig()
		if err != nil {
			return nil, err
		}
		if *k.flags.Namespace != "" {
			ns = *k.flags.Namespace
		}
		// As kubectl in a pod: --token and the TLS flags override the service account's.
		if tok := *k.flags.BearerToken; tok != "" {
			cfg.BearerToken, cfg.BearerTokenFile = tok, ""
		}
		if ca := *k.flags.CAFile; ca != "" {
			cfg.CAFile = ca
		}
		if *k.flags.Insecure {
			cfg.Insecure, cfg.CAFile = true, ""
		}
		return &kubeTarget{Config: cfg, Namespace: ns, Source: inClusterSource, Explicit: true}, nil
	}
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig: %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, fmt.Errorf("namespace of the kubeconfig context: %w", err)
	}
	if ns == "default" && *k.flags.Namespace == "" && !contextSetsNamespace(raw, k.currentContext(raw)) {
		ns = "" // clientcmd's fallback, not a choice: commands apply their own default
	}
	t := &kubeTarget{Config: cfg, Namespace: ns, Context: k.currentContext(raw)}
	switch env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); {
	case server != "":
		t.Source, t.Explicit = "--server "+server, true
	case explicit != "":
		t.Source, t.Explicit = "--kubeconfig "+explicit, true
	case env != "":
		t.Source, t.Explicit = "$KUBECONFIG ("+env+")", true
	default:
		t.Source = clientcmd.RecommendedHomeFile
	}
	return t, nil
}

func (k *kubeOptions) currentContext(raw clientcmdapi.Config) string {
	if c := *k.flags.Context; c != "" {
		return c
	}
	return raw.CurrentContext
}

func contextSetsNamespace(raw clientcmdapi.Config, name string) bool {
	c, ok := raw.Contexts[name]
	return ok && c.Namespace != ""
}

// inClusterConfig is rest.InClusterConfig with the service account directory taken from
// serviceAccountDir, and the pod's namespace.
func inClusterConfig() (*rest.Config, string, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" {
		return nil, "", errNoKubeconfig
	}
	if port == "" {
		port = "443"
	}
	tokenFile := filepath.Join(serviceAccountDir, "token")
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, "", fmt.Errorf("in a pod (KUBERNETES_SERVICE_HOST is set) but no service account token at %s, and %w", tokenFile, errNoKubeconfig)
	}
	ns := ""
	if b, err := os.ReadFile(filepath.Join(serviceAccountDir, "namespace")); err == nil {
		ns = strings.TrimSpace(string(b))
	}
	return &rest.Config{
		Host:            "https://" + net.JoinHostPort(host, port),
		BearerTokenFile: tokenFile,
		TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(serviceAccountDir, "ca.crt")},
	}, ns, nil
}

// inClusterAvailable: drover runs in a pod with a service account token.
func inClusterAvailable() bool {
	_, _, err := inClusterConfig()
	return err == nil
}

// client returns a client of the management cluster (which can also watch, for list -w) and the
// namespace to work in: -n, else the context's, else def.
func (k *kubeOptions) client(def string) (client.WithWatch, string, error) {
	t, err := k.resolve()
	if err != nil {
		return nil, "", err
	}
	c, err := client.NewWithWatch(t.Config, client.Options{Scheme: server.Scheme()})
	if err != nil {
		return nil, "", fmt.Errorf("connect to %s: %w", t.Config.Host, err)
	}
	ns := t.Namespace
	if ns == "" {
		ns = def
	}
	return c, ns, nil
}

// namespace is the namespace client would work in, found without connecting: -n, else the
// context's, else def. Without any kubeconfig (--dry-run on a CI runner) it is -n, else def.
func (k *kubeOptions) namespace(def string) (string, error) {
	t, err := k.resolve()
	switch {
	case errors.Is(err, errNoKubeconfig):
		t = &kubeTarget{Namespace: *k.flags.Namespace}
	case err != nil:
		return "", err
	}
	if t.Namespace == "" {
		return def, nil
	}
	return t.Namespace, nil
}

// listNamespace is the namespace a list command lists in: "" (all) with -A.
func (k *kubeOptions) listNamespace(ns string) string {
	if k.allNamespaces {
		return ""
	}
	return ns
}

// listOptions are the namespace (-n, -A) and label selector (-l) of a list command.
func (k *kubeOptions) listOptions(ns string) ([]client.ListOption, error) {
	opts := []client.ListOption{client.InNamespace(k.listNamespace(ns))}
	if k.selector != "" {
		sel, err := labels.Parse(k.selector)
		if err != nil {
			return nil, usageErrorf("-l %q: %w", k.selector, err)
		}
		opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
	}
	return opts, nil
}

// downstreamConfig loads the kubeconfig of a downstream cluster (--downstream-kubeconfig): an
// explicit file only, never $KUBECONFIG, which names the management cluster.
func downstreamConfig(path string) (*rest.Config, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--downstream-kubeconfig %s: file not found", path)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load --downstream-kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// anyExists reports whether one of paths exists.
func anyExists(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); p != "" && err == nil {
			return true
		}
	}
	return false
}
