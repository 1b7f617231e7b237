// Package manifests builds the downstream objects of an agent installation: the importer
// applies them, `drover agent install` prints them, and the Helm chart renders the same set.
package manifests

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	fleetv1alpha1 "github.com/droverhq/drover/api/fleet/v1alpha1"
	"github.com/droverhq/drover/internal/version"
)

// Names of the downstream objects.
const (
	DefaultNamespace = "drover-agent"
	Name             = "drover-agent"
	// BootstrapSecret holds the import identity until registration succeeds.
	BootstrapSecret = "drover-agent-bootstrap"
	// CredentialSecret holds the request identity after registration.
	CredentialSecret = "drover-agent-credential"
	// ConfigMap holds the agent's settings (clientID, labels).
	ConfigMap = "drover-agent"
	// KeyLabels is the ConfigMap key of the JSON cluster labels.
	KeyLabels = "labels"
)

// DefaultImage is the agent image of this build of drover: ghcr.io/droverhq/drover:<version>,
// so agents run the version of the server that deploys them (drover server --agent-image
// overrides it).
func DefaultImage() string { return version.Image() }

// AgentVersion is the version c's agent reports with its heartbeats, else (an agent older than
// that report, or none yet) the tag of the image drover deploys to it: spec.agentImage, else
// DefaultImage().
func AgentVersion(c *fleetv1alpha1.Cluster) string {
	if v := c.Status.Agent.Version; v != "" {
		return v
	}
	img := c.Spec.AgentImage
	if img == "" {
		img = DefaultImage()
	}
	if i := strings.LastIndex(img, ":"); i >= 0 && !strings.Contains(img[i:], "/") {
		return img[i+1:]
	}
	return img
}

// Options configure an agent installation.
type Options struct {
	Namespace string
	// Image of the agent (default DefaultImage()).
	Image    string
	ClientID string
	Labels   map[string]string
	// Bootstrap is the bootstrap secret's data (the token values); nil leaves it out.
	Bootstrap map[string][]byte
	// ConfigHash is put on the pod template so a changed bootstrap rolls the agent.
	ConfigHash string
	// Env is added to the agent container's environment after POD_NAME.
	Env []corev1.EnvVar
	// Tolerations of the agent pod.
	Tolerations []corev1.Toleration
	// Resources of the agent container.
	Resources *corev1.ResourceRequirements
	// RBAC is the agent's rights on its own cluster (default: DefaultRules cluster-wide).
	RBAC RBAC
}

// RBAC is what the agent may do on its own cluster to apply its BundleDeployments.
type RBAC struct {
	// Rules of the agent's ClusterRole (default DefaultRules). The agent needs no non-resource
	// URLs: discovery is open to every authenticated user.
	Rules []rbacv1.PolicyRule
	// Namespaces, when set, grant Rules only in these namespaces (RoleBindings to the
	// ClusterRole instead of a ClusterRoleBinding): the agent can then apply namespaced
	// resources there and nothing cluster-scoped. Its own namespace gets a Role for what the
	// agent keeps there (credential, status, records, leader lease), and it may read the
	// kube-system namespace (its default clientID is that namespace's UID).
	Namespaces []string
}

// DefaultRules let the agent apply any resource: what it deploys is decided upstream.
func DefaultRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}
}

// selfRules are the agent's rights in its own namespace in namespaced mode.
func selfRules() []rbacv1.PolicyRule {
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"}, Verbs: all},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	}
}

// ForCluster are the settings of c's agent that the Cluster spec carries. The importer and the
// agent-management Bundle both build the agent from them, so they agree byte for byte.
func ForCluster(c *fleetv1alpha1.Cluster) Options {
	o := Options{Namespace: c.Spec.AgentNamespace, Image: c.Spec.AgentImage, ClientID: c.Spec.ClientID,
		Env: c.Spec.AgentEnv, Tolerations: c.Spec.AgentTolerations}
	if c.Spec.AgentResources != nil {
		o.Resources = c.Spec.AgentResources.DeepCopy()
	}
	if r := c.Spec.AgentRBAC; r != nil {
		o.RBAC = RBAC{Rules: slices.Clone(r.Rules), Namespaces: slices.Clone(r.Namespaces)}
	}
	return o
}

// Objects returns the agent installation's objects in apply order.
func Objects(o Options) ([]*unstructured.Unstructured, error) {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Image == "" {
		o.Image = DefaultImage()
	}
	labels := map[string]string{"app.kubernetes.io/name": Name, fleetv1alpha1.ManagedLabel: "true"}
	meta := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}
	}
	clusterLabels := o.Labels
	if clusterLabels == nil {
		clusterLabels = map[string]string{} // "{}", not "null", in the ConfigMap people read
	}
	labelsJSON, err := json.Marshal(clusterLabels)
	if err != nil {
		return nil, fmt.Errorf("encode labels: %w", err)
	}
	objs := []runtime.Object{
		&corev1.Namespace{TypeMeta: tm("v1", "Namespace"), ObjectMeta: meta("", o.Namespace)},
		&corev1.ServiceAccount{TypeMeta: tm("v1", "ServiceAccount"), ObjectMeta: meta(o.Namespace, Name)},
	}
	objs = append(objs, rbacObjects(o, meta)...)
	objs = append(objs,
		&corev1.ConfigMap{TypeMeta: tm("v1", "ConfigMap"), ObjectMeta: meta(o.Namespace, ConfigMap),
			Data: map[string]string{fleetv1alpha1.KeyClientID: o.ClientID, KeyLabels: string(labelsJSON)}},
	)
	if o.Bootstrap != nil {
		objs = append(objs, &corev1.Secret{TypeMeta: tm("v1", "Secret"), ObjectMeta: meta(o.Namespace, BootstrapSecret),
			Type: fleetv1alpha1.SecretTypeAgentBootstrap, Data: o.Bootstrap})
	}
	objs = append(objs, &appsv1.Deployment{TypeMeta: tm("apps/v1", "Deployment"), ObjectMeta: meta(o.Namespace, Name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": Name},
					Annotations: map[string]string{"fleet.drover.io/config-hash": o.ConfigHash}},
				Spec: corev1.PodSpec{
					ServiceAccountName: Name,
					Tolerations:        o.Tolerations,
					Containers: []corev1.Container{{
						Name: "agent", Image: o.Image, Args: []string{"agent", "--namespace", o.Namespace},
						Env:       append([]corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}, o.Env...),
						Resources: resources(o.Resources),
						Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
							{Name: "health", ContainerPort: HealthPort, Protocol: corev1.ProtocolTCP}},
						LivenessProbe:  probe("/healthz"),
						ReadinessProbe: probe("/readyz"),
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
				},
			},
		}})
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("convert %T: %w", obj, err)
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		out = append(out, u)
	}
	return out, nil
}

// MetricsPort and HealthPort are where drover agent serves /metrics and /healthz, /readyz by
// default (agent.DefaultMetricsPort, agent.DefaultHealthPort).
const (
	MetricsPort = 8080
	HealthPort  = 8081
)

// probe is an HTTP probe of the agent's health port. Liveness only needs the process to answer;
// readiness also needs the downstream API server (agent /readyz).
func probe(path string) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("health"), Scheme: corev1.URISchemeHTTP}},
		PeriodSeconds:    10,
		TimeoutSeconds:   5,
		FailureThreshold: 3,
	}
}

// rbacObjects are the agent's downstream rights. The agent applies arbitrary manifests, so by
// default it has every verb on every resource (upstream its request identity is scoped to its
// own cluster namespace); o.RBAC narrows that.
func rbacObjects(o Options, meta func(ns, name string) metav1.ObjectMeta) []runtime.Object {
	clusterRole := Name + "-" + o.Namespace
	rules := o.RBAC.Rules
	if len(rules) == 0 {
		rules = DefaultRules()
	}
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: o.Namespace, Name: Name}}
	roleRef := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	crTM, crbTM := tm("rbac.authorization.k8s.io/v1", "ClusterRole"), tm("rbac.authorization.k8s.io/v1", "ClusterRoleBinding")
	objs := []runtime.Object{&rbacv1.ClusterRole{TypeMeta: crTM, ObjectMeta: meta("", clusterRole), Rules: rules}}
	if len(o.RBAC.Namespaces) == 0 {
		return append(objs, &rbacv1.ClusterRoleBinding{TypeMeta: crbTM, ObjectMeta: meta("", clusterRole),
			RoleRef: roleRef("ClusterRole", clusterRole), Subjects: subjects})
	}
	identity := clusterRole + "-identity"
	objs = append(objs,
		&rbacv1.ClusterRole{TypeMeta: crTM, ObjectMeta: meta("", identity), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{metav1.NamespaceSystem}, Verbs: []string{"get"}}}},
		&rbacv1.ClusterRoleBinding{TypeMeta: crbTM, ObjectMeta: meta("", identity), RoleRef: roleRef("ClusterRole", identity), Subjects: subjects},
		&rbacv1.Role{TypeMeta: tm("rbac.authorization.k8s.io/v1", "Role"), ObjectMeta: meta(o.Namespace, Name), Rules: selfRules()},
		&rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta(o.Namespace, Name),
			RoleRef: roleRef("Role", Name), Subjects: subjects})
	for _, ns := range o.RBAC.Namespaces {
		objs = append(objs, &rbacv1.RoleBinding{TypeMeta: tm("rbac.authorization.k8s.io/v1", "RoleBinding"), ObjectMeta: meta(ns, clusterRole),
			RoleRef: roleRef("ClusterRole", clusterRole), Subjects: subjects})
	}
	return objs
}

func resources(r *corev1.ResourceRequirements) corev1.ResourceRequirements {
	if r == nil {
		return corev1.ResourceRequirements{}
	}
	return *r
}

func tm(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// YAML renders objects as a multi-document YAML stream.
func YAML(objs []*unstructured.Unstructured) ([]byte, error) {
	var out []byte
	for _, u := range objs {
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		out = append(append(out, "---\n"...), b...)
	}
	return out, nil
}
