package extract

import (
	"archive/tar"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tcpxogen/tcpxogen/internal/facts"
	"github.com/tcpxogen/tcpxogen/internal/reconstruction"
)

func libraryOf(libs []facts.Library, name string) (facts.Library, bool) {
	i := slices.IndexFunc(libs, func(l facts.Library) bool { return l.Name == name })
	if i < 0 {
		return facts.Library{}, false
	}
	return libs[i], true
}

// The needed sonames are read from the image: a library replaced in a top
// layer is reported with the new library's list.
func TestPluginLibrariesComeFromTheImage(t *testing.T) {
	so, err := reconstruction.SharedObject("libnccl-net.so", []string{"libcudart.so.13", "libc.so.6"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runOn(t, imageWithTop(t, reconstruction.Entry{Name: "plugins/libnccl-net.so", Type: tar.TypeReg, Body: so}))
	if err != nil {
		t.Fatal(err)
	}
	net, ok := libraryOf(res.Facts.PluginLibraries, "libnccl-net.so")
	if !ok || !slices.Equal(net.Needed, []string{"libcudart.so.13", "libc.so.6"}) {
		t.Errorf("libnccl-net.so = %+v, %v; want the top layer's DT_NEEDED", net, ok)
	}
	if _, ok := libraryOf(res.Facts.PluginLibraries, "libnccl-tuner.so"); !ok {
		t.Errorf("libnccl-tuner.so missing from %+v", res.Facts.PluginLibraries)
	}
	for _, l := range res.Facts.PluginLibraries {
		if strings.HasSuffix(l.Name, ".textproto") {
			t.Errorf("%s is not a shared object", l.Name)
		}
	}
}

// A file under /plugins named as a shared object that is not one is a named
// extraction error, never skipped.
func TestBadPluginLibrariesAreNamedErrors(t *testing.T) {
	good, err := reconstruction.SharedObject("libnccl-tuner.so", []string{"libc.so.6"})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		body []byte
		want string
	}{
		"text placeholder": {[]byte("PLACEHOLDER for libnccl-tuner.so"), `/plugins/libnccl-tuner.so is not an ELF file (it starts "PLACEHOLDER for "`},
		"truncated":        {good[:100], "/plugins/libnccl-tuner.so is a truncated or malformed ELF file (100 bytes)"},
		"empty":            {nil, "/plugins/libnccl-tuner.so is not an ELF file"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := runOn(t, imageWithTop(t, reconstruction.Entry{Name: "plugins/libnccl-tuner.so", Type: tar.TypeReg, Body: tc.body}))
			var le *LibraryError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "DT_NEEDED") {
				t.Fatalf("got %v; want a LibraryError containing %q", err, tc.want)
			}
		})
	}
}

func TestOversizedPluginLibraryIsRefused(t *testing.T) {
	body := make([]byte, 4097)
	copy(body, "\x7fELF")
	_, err := runOnWith(t, imageWithTop(t, reconstruction.Entry{Name: "plugins/libhuge.so", Type: tar.TypeReg, Body: body}), func(c *Config) { c.MaxLibraryBytes = 4096 })
	var le *LibraryError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "over the 4096 bytes") {
		t.Fatalf("got %v; want the size refusal", err)
	}
}
