// ociarchive turns an image tarball the harness built (mkimage's docker-archive) into an OCI image
// archive: an OCI image layout (oci-layout, index.json, blobs/sha256/...) in one tar, with OCI media
// types, the format `skopeo copy oci-archive:`, `ctr images import` and `oras cp --from-oci-layout`
// read. The layers and the image's configuration are carried over unchanged (same diff IDs,
// entrypoint, user, environment), so what make dist ships is what the tests ran.
//
// Usage: ociarchive -in IMAGE.tar -ref NAME:TAG -out IMAGE.oci.tar
//
// The index names the image twice: org.opencontainers.image.ref.name (the tag: skopeo's
// oci-archive:FILE:TAG) and io.containerd.image.name (the whole reference ctr imports it under).
// Prints the manifest's digest on stdout.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"kubespaces-tools/images/internal/tree"
)

func main() {
	in := flag.String("in", "", "docker-archive tarball holding one image")
	ref := flag.String("ref", "", "the image's name with its tag, e.g. kubespaces/operator:0.1.0")
	out := flag.String("out", "", "OCI archive to write")
	flag.Parse()
	if *in == "" || *ref == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*in, *ref, *out); err != nil {
		fmt.Fprintln(os.Stderr, "ociarchive:", err)
		os.Exit(1)
	}
}

func run(in, ref, out string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("-ref %q: %w", ref, err)
	}
	src, err := tarball.ImageFromPath(in, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	cfg, err := src.ConfigFile()
	if err != nil {
		return err
	}
	layers, err := src.Layers()
	if err != nil {
		return err
	}
	// The same layers and configuration under OCI media types (the tarball's are Docker's).
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for _, l := range layers {
		if img, err = mutate.Append(img, mutate.Addendum{Layer: l, MediaType: types.OCILayer}); err != nil {
			return err
		}
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(filepath.Dir(out), ".ociarchive-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	index, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	err = index.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.TagStr(),
		"io.containerd.image.name":          ref,
	}))
	if err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarTree(dir, tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Println(digest.String())
	return nil
}

// tarTree writes the layout under dir to the tar at path, reproducibly (package tree).
func tarTree(dir, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tree.Write(f, dir); err != nil {
		return err
	}
	return f.Close()
}
