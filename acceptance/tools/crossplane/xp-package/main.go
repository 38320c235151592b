// xp-package builds a Crossplane Function package (xpkg) the way `crossplane xpkg build` does,
// with crossplane-runtime's own builder (parse, lint, the annotated package.yaml layer on the
// embedded runtime image), and fills Crossplane's package cache with it, so that a cluster with
// no registry can install the Function:
//
//   - OUT: the xpkg as an image archive, tagged TAG. It is the runtime image plus the package
//     layer, so the node can run it as the Function's container.
//   - CACHE_DIR/<id>.gz: what Crossplane's package manager stores in its cache after a pull
//     (crossplane-runtime's FsPackageCache, fed by its ExtractPackageYAML), under the id it
//     looks up for the reference it prints.
//
// It prints that reference, SOURCE at the xpkg's digest: a Function with it as its spec.package
// and packagePullPolicy Never is installed from the cache (a digest reference needs no registry
// to resolve). SOURCE must name its registry: Crossplane takes an unqualified name for one on
// Docker Hub.
//
// Usage:
//
//	xp-package --package-root DIR --runtime-image TARBALL --source SOURCE --tag TAG --out TARBALL \
//	           --cache-dir DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/spf13/afero"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg/parser"
	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg/parser/examples"
)

func main() {
	root := flag.String("package-root", "", "the package's directory (crossplane.yaml and its CRDs)")
	runtime := flag.String("runtime-image", "", "the Function's runtime image, an image archive")
	source := flag.String("source", "", "the package's name, without tag or digest")
	tag := flag.String("tag", "", "the name the package image gets in OUT")
	out := flag.String("out", "", "where to write the package image archive")
	cacheDir := flag.String("cache-dir", "", "where to write the package cache entry")
	flag.Parse()
	for n, v := range map[string]string{"--package-root": *root, "--runtime-image": *runtime, "--source": *source, "--tag": *tag, "--out": *out, "--cache-dir": *cacheDir} {
		if v == "" {
			fail(2, fmt.Errorf("%s is required", n))
		}
	}
	if err := run(*root, *runtime, *source, *tag, *out, *cacheDir); err != nil {
		fail(1, err)
	}
}

func fail(code int, err error) {
	fmt.Fprintln(os.Stderr, "xp-package:", err)
	os.Exit(code)
}

func run(root, runtime, sourceName, tagName, out, cacheDir string) error {
	source, err := name.NewRepository(sourceName, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("--source: %w", err)
	}
	tag, err := name.NewTag(tagName)
	if err != nil {
		return fmt.Errorf("--tag: %w", err)
	}
	base, err := tarball.ImageFromPath(runtime, nil)
	if err != nil {
		return fmt.Errorf("--runtime-image: %w", err)
	}
	metaScheme, err := xpkg.BuildMetaScheme()
	if err != nil {
		return err
	}
	objScheme, err := xpkg.BuildObjectScheme()
	if err != nil {
		return err
	}
	fs := afero.NewOsFs()
	// As the CLI reads a package root: YAML files only; examples/ (absent here) apart.
	examplesRoot := filepath.Join(root, "examples")
	builder := xpkg.New(
		parser.NewFsBackend(fs, parser.FsDir(root),
			parser.FsFilters(parser.SkipDirs(), parser.SkipNotYAML(), parser.SkipEmpty(), xpkg.SkipContains(examplesRoot))),
		parser.NewFsBackend(fs, parser.FsDir(examplesRoot),
			parser.FsFilters(parser.SkipDirs(), parser.SkipNotYAML(), parser.SkipEmpty())),
		parser.New(metaScheme, objScheme),
		examples.New(),
	)
	img, _, err := builder.Build(context.Background(), xpkg.WithBase(base))
	if err != nil {
		return fmt.Errorf("building the package: %w", err)
	}
	if err := tarball.WriteToFile(out, tag, img); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	ref := source.Digest(digest.String())
	content, err := xpkg.ExtractPackageYAML(img)
	if err != nil {
		return err
	}
	defer content.Close() //nolint:errcheck // only read
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return err
	}
	id := xpkg.FriendlyID(xpkg.ParsePackageSourceFromReference(ref), digest.String())
	if err := xpkg.NewFsPackageCache(cacheDir, fs).Store(id, content); err != nil {
		return fmt.Errorf("--cache-dir: %w", err)
	}
	fmt.Println(ref.String())
	return nil
}
