package rendercmd

import (
	"context"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/tcpxogen/tcpxogen/internal/access"
	"github.com/tcpxogen/tcpxogen/internal/names"
	"github.com/tcpxogen/tcpxogen/runtimes"
	"github.com/tcpxogen/tcpxogen/tools/internal/cli"
)

// renderRBAC prints the roles and bindings a command needs, from the list
// the command's guard holds it to (package access).
func renderRBAC(_ context.Context, args []string, s cli.Streams) error {
	lists := access.Lists()
	commands := slices.Sorted(func(yield func(string) bool) {
		for n := range lists {
			if !yield(n) {
				return
			}
		}
	})
	fs := cli.NewFlags("render rbac", "render rbac --for "+strings.Join(commands, "|")+" [--install-trainer] [--namespace NS] [--service-account NS/NAME | --user NAME | --group NAME] [-o yaml|json]", s)
	command := fs.String("for", "", "the command whose permissions to render: "+strings.Join(commands, ", ")+" (required)")
	install := fs.Bool(access.InstallTrainer, false, "validate only: add the ClusterRole for installing and tearing down the pinned Kubeflow Trainer (CRDs, webhooks, cluster roles: as powerful as cluster-admin), needed only when the recipe does not declare the trainer and the cluster has none")
	namespace := fs.String("namespace", "", "the namespace the command's namespaced rules are granted in (validate: its --namespace, default default; discover and check-cluster: the installer's, default "+names.ComponentsNamespace+")")
	sa := fs.String("service-account", "", "bind to this service account, NAMESPACE/NAME (default: tcpxogen-COMMAND in --namespace, rendered too)")
	user := fs.String("user", "", "bind to this user instead of a service account")
	group := fs.String("group", "", "bind to this group instead of a service account")
	format := fs.StringP("output", "o", "yaml", "output format: yaml or json")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	list, ok := lists[*command]
	if !ok {
		return cli.BadInput("--for %q: give the command whose permissions to render, one of %s", *command, strings.Join(commands, ", "))
	}
	var rows []string
	if *install {
		if _, ok := list.Row(access.InstallTrainer); !ok {
			return cli.BadInput("--%s: %s never installs the trainer; only validate does", access.InstallTrainer, *command)
		}
		rows = append(rows, access.InstallTrainer)
	}
	b, err := list.Bind(*namespace, rows...)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	subject, err := subjectOf(*sa, *user, *group)
	if err != nil {
		return cli.BadInput("%w", err)
	}
	r, err := b.Render(subject)
	if err != nil {
		return cli.BadInput("--namespace: %w", err)
	}
	return write(s, runtimes.Format(*format), r.Header, r.Objects...)
}

func subjectOf(sa, user, group string) (access.Subject, error) {
	given := 0
	for _, v := range []string{sa, user, group} {
		if v != "" {
			given++
		}
	}
	switch {
	case given > 1:
		return access.Subject{}, cli.BadInput("give one subject: --service-account, --user or --group")
	case sa != "":
		ns, name, ok := strings.Cut(sa, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			return access.Subject{}, cli.BadInput("--service-account %q: want NAMESPACE/NAME", sa)
		}
		return access.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}, nil
	case user != "":
		return access.Subject{Kind: rbacv1.UserKind, Name: user}, nil
	case group != "":
		return access.Subject{Kind: rbacv1.GroupKind, Name: group}, nil
	}
	return access.Subject{}, nil
}
