// mkimage writes a single-layer container image from a directory, as a docker-archive tarball that
// `ctr images import` loads: no registry and no daemon. The layer is reproducible (entries sorted,
// owned by root, mtime 0), so the image's digest depends on its content only and the harness can
// skip an import when containerd already holds that digest. crane cannot set the entrypoint of an
// image that exists only as a tarball, hence this small tool over go-containerregistry.
//
// Usage: mkimage -dir ROOTFS -tag NAME:TAG -out IMAGE.tar [-entrypoint JSON] [-cmd JSON]
//
//	[-env K=V]... [-workdir DIR] [-user UID]
//
// Prints the image's config digest (the image ID containerd shows) on stdout.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"kubespaces-tools/images/internal/tree"
)

type list []string

func (l *list) String() string     { return fmt.Sprint(*l) }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	dir := flag.String("dir", "", "root filesystem of the image")
	tag := flag.String("tag", "", "image name with tag, e.g. localhost/kubespaces/pause:1")
	out := flag.String("out", "", "docker-archive tarball to write")
	entrypoint := flag.String("entrypoint", "", "entrypoint as a JSON array")
	cmd := flag.String("cmd", "", "command as a JSON array")
	workdir := flag.String("workdir", "", "working directory")
	user := flag.String("user", "", "user (uid[:gid])")
	var env list
	flag.Var(&env, "env", "K=V environment entry (repeatable)")
	flag.Parse()
	if *dir == "" || *tag == "" || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*dir, *tag, *out, *entrypoint, *cmd, *workdir, *user, env); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func run(dir, tag, out, entrypoint, cmd, workdir, user string, env []string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag %q: %w", tag, err)
	}
	layerTar, err := tarDir(dir)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture, cfg.OS = "amd64", "linux"
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"}, env...)
	cfg.Config.WorkingDir, cfg.Config.User = workdir, user
	if err := jsonArray(entrypoint, &cfg.Config.Entrypoint); err != nil {
		return fmt.Errorf("-entrypoint: %w", err)
	}
	if err := jsonArray(cmd, &cfg.Config.Cmd); err != nil {
		return fmt.Errorf("-cmd: %w", err)
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	id, err := img.ConfigName()
	if err != nil {
		return err
	}
	fmt.Println(id.String())
	return nil
}

func jsonArray(s string, into *[]string) error {
	if s == "" {
		return nil
	}
	return json.Unmarshal([]byte(s), into)
}

// tarDir writes dir as a reproducible tar (package tree).
func tarDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	if err := tree.Write(&buf, dir); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
