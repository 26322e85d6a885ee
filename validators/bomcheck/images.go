package bomcheck

import (
	"context"
	"fmt"
	"strings"

	"github.com/tcpxogen/tcpxogen/bom"
)

// imageRef is an image reference found in a manifest.
type imageRef struct{ file, where, ref string }

// manifestImages walks every container and init container of every object.
func manifestImages(ms []Manifest) []imageRef {
	var out []imageRef
	for _, m := range ms {
		for _, o := range m.Objects {
			walkContainers(o.Object, func(c map[string]any, where string) {
				if img, ok := c["image"].(string); ok {
					out = append(out, imageRef{m.Path, o.GetKind() + "/" + o.GetName() + " " + where, img})
				}
			})
		}
	}
	return out
}

func checkImages(_ context.Context, t *Tree) Result {
	files := append([]string{bom.RepoPath}, ManifestFiles...)
	errs := []error{t.BOMErr}
	for _, err := range t.ManifestErrs {
		errs = append(errs, err)
	}
	if r := need(files, errs...); r != nil {
		return *r
	}
	byRepo := map[string]bom.Role{}
	for _, role := range t.BOM.ImageRoles() {
		byRepo[role.Image.Repository()] = role
	}
	var problems []string
	imgs := manifestImages(t.Manifests)
	for _, im := range imgs {
		role, known := byRepo[repository(im.ref)]
		_, notPinned := bom.ParsePinned(im.ref)
		switch {
		case known && im.ref == role.Image.Reference:
			// The BOM's own pin, which may be digest-only with a source.
		case notPinned != nil:
			problems = append(problems, fmt.Sprintf("%s %s: not pinned by digest: %v", im.file, im.where, notPinned))
		case !known:
			problems = append(problems, fmt.Sprintf("%s %s: %q is no BOM role's image (a stray pin)", im.file, im.where, im.ref))
		case im.ref != role.Image.Reference:
			problems = append(problems, fmt.Sprintf("%s %s: %q, but the BOM's %s is %q", im.file, im.where, im.ref, role.Name, role.Image.Reference))
		}
	}
	if len(problems) > 0 {
		return fail(files, "pin images only in bom/bom.yaml and "+regenerate+"; never edit a manifest's image by hand", "%s", strings.Join(problems, "; "))
	}
	return pass("%d image references in %d manifests: all BOM pins", len(imgs), len(t.Manifests))
}
