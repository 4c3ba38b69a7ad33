#!/usr/bin/env python3
"""Packs a root filesystem directory into an OCI image layout tarball, offline, by hand:
one uncompressed layer tar (owners 0:0, mtime 0), the image config, the manifest and the
index, each blob named by its sha256 digest; for `ctr images import`.

usage: oci_image.py ROOTFS_DIR OUT.tar REF [CMD_JSON]
  CMD_JSON: the config's Cmd (default ["/bin/sh"])"""
import hashlib, io, json, os, sys, tarfile


def layer_tar(rootfs):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for dirpath, dirs, files in os.walk(rootfs):
            dirs.sort()
            for name in dirs + sorted(files):
                path = os.path.join(dirpath, name)
                ti = t.gettarinfo(path, arcname=os.path.relpath(path, rootfs))
                ti.uid = ti.gid = 0
                ti.uname = ti.gname = ""
                ti.mtime = 0
                if ti.isreg():
                    with open(path, "rb") as f:
                        t.addfile(ti, f)
                else:
                    t.addfile(ti)
    return buf.getvalue()


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def main():
    rootfs, out, ref = sys.argv[1:4]
    cmd = json.loads(sys.argv[4]) if len(sys.argv) > 4 else ["/bin/sh"]
    layer = layer_tar(rootfs)
    config = json.dumps({
        "architecture": "amd64", "os": "linux",
        "config": {"Env": ["PATH=/bin"], "Cmd": cmd},
        "rootfs": {"type": "layers", "diff_ids": [digest(layer)]},
    }).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": digest(config), "size": len(config)},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar",
                    "digest": digest(layer), "size": len(layer)}],
    }).encode()
    index = json.dumps({
        "schemaVersion": 2,
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "digest": digest(manifest), "size": len(manifest),
                       "annotations": {"org.opencontainers.image.ref.name": ref,
                                       "io.containerd.image.name": ref}}],
    }).encode()
    with tarfile.open(out, "w") as t:
        def add(name, data):
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
        add("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
        add("index.json", index)
        for blob in (layer, config, manifest):
            add("blobs/sha256/" + digest(blob)[7:], blob)


if __name__ == "__main__":
    main()
