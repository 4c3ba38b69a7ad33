#!/usr/bin/env python3
"""A CRI client for the tests, as the kubelet speaks to containerd: gRPC over a unix socket,
runtime.v1's RuntimeService and ImageService. Only the messages and fields the tests use
are described (below, a table: field name, number, type), by their numbers in the CRI's
api.proto; protobuf builds the classes from the table at start, so no generated code and no
protoc are needed. Debian's python3-grpcio and python3-protobuf.

usage: cri.py SOCKET METHOD [JSON]
  METHOD is a RuntimeService or ImageService method (RunPodSandbox, ExecSync, ImageStatus,
  ...); JSON the request in protobuf's JSON mapping (field names as in api.proto). Prints
  the response as JSON (field names as in api.proto, bytes as base64). A gRPC error is
  printed to stderr as "CODE: details" with exit status 1."""
import json
import sys

import grpc
from google.protobuf import descriptor_pb2, json_format, message_factory

PACKAGE = "runtime.v1"

# message: [(field, number, type)]; "rep T" is repeated, "map" is map<string, string>,
# enums are int32 (the same varint on the wire).
MESSAGES = {
    "VersionRequest": [("version", 1, "string")],
    "VersionResponse": [("version", 1, "string"), ("runtime_name", 2, "string"),
                        ("runtime_version", 3, "string"),
                        ("runtime_api_version", 4, "string")],
    "DNSConfig": [("servers", 1, "rep string"), ("searches", 2, "rep string"),
                  ("options", 3, "rep string")],
    "Mount": [("container_path", 1, "string"), ("host_path", 2, "string"),
              ("readonly", 3, "bool"), ("selinux_relabel", 4, "bool"),
              ("propagation", 5, "int32")],
    "NamespaceOption": [("network", 1, "int32"), ("pid", 2, "int32"), ("ipc", 3, "int32"),
                        ("target_id", 4, "string")],
    "Int64Value": [("value", 1, "int64")],
    "SecurityProfile": [("profile_type", 1, "int32"), ("localhost_ref", 2, "string")],
    "LinuxSandboxSecurityContext": [
        ("namespace_options", 1, "NamespaceOption"), ("run_as_user", 3, "Int64Value"),
        ("readonly_rootfs", 4, "bool"), ("supplemental_groups", 5, "rep int64"),
        ("privileged", 6, "bool"), ("seccomp_profile_path", 7, "string"),
        ("run_as_group", 8, "Int64Value"), ("seccomp", 9, "SecurityProfile")],
    "LinuxPodSandboxConfig": [("cgroup_parent", 1, "string"),
                              ("security_context", 2, "LinuxSandboxSecurityContext"),
                              ("sysctls", 3, "map")],
    "PodSandboxMetadata": [("name", 1, "string"), ("uid", 2, "string"),
                           ("namespace", 3, "string"), ("attempt", 4, "uint32")],
    "PodSandboxConfig": [("metadata", 1, "PodSandboxMetadata"), ("hostname", 2, "string"),
                         ("log_directory", 3, "string"), ("dns_config", 4, "DNSConfig"),
                         ("labels", 6, "map"), ("annotations", 7, "map"),
                         ("linux", 8, "LinuxPodSandboxConfig")],
    "RunPodSandboxRequest": [("config", 1, "PodSandboxConfig"),
                             ("runtime_handler", 2, "string")],
    "RunPodSandboxResponse": [("pod_sandbox_id", 1, "string")],
    "StopPodSandboxRequest": [("pod_sandbox_id", 1, "string")],
    "StopPodSandboxResponse": [],
    "RemovePodSandboxRequest": [("pod_sandbox_id", 1, "string")],
    "RemovePodSandboxResponse": [],
    "PodSandboxStatusRequest": [("pod_sandbox_id", 1, "string"), ("verbose", 2, "bool")],
    "PodSandboxNetworkStatus": [("ip", 1, "string")],
    "PodSandboxStatus": [("id", 1, "string"), ("metadata", 2, "PodSandboxMetadata"),
                         ("state", 3, "int32"), ("created_at", 4, "int64"),
                         ("network", 5, "PodSandboxNetworkStatus"), ("labels", 7, "map"),
                         ("annotations", 8, "map"), ("runtime_handler", 9, "string")],
    "PodSandboxStatusResponse": [("status", 1, "PodSandboxStatus"), ("info", 2, "map")],
    "ImageSpec": [("image", 1, "string"), ("annotations", 2, "map")],
    "KeyValue": [("key", 1, "string"), ("value", 2, "string")],
    "LinuxContainerResources": [
        ("cpu_period", 1, "int64"), ("cpu_quota", 2, "int64"), ("cpu_shares", 3, "int64"),
        ("memory_limit_in_bytes", 4, "int64"), ("oom_score_adj", 5, "int64"),
        ("cpuset_cpus", 6, "string"), ("cpuset_mems", 7, "string"),
        ("memory_swap_limit_in_bytes", 10, "int64")],
    "Capability": [("add_capabilities", 1, "rep string"),
                   ("drop_capabilities", 2, "rep string"),
                   ("add_ambient_capabilities", 3, "rep string")],
    "LinuxContainerSecurityContext": [
        ("capabilities", 1, "Capability"), ("privileged", 2, "bool"),
        ("namespace_options", 3, "NamespaceOption"), ("run_as_user", 5, "Int64Value"),
        ("run_as_username", 6, "string"), ("readonly_rootfs", 7, "bool"),
        ("supplemental_groups", 8, "rep int64"), ("no_new_privs", 11, "bool"),
        ("run_as_group", 12, "Int64Value"), ("masked_paths", 13, "rep string"),
        ("readonly_paths", 14, "rep string"), ("seccomp", 15, "SecurityProfile")],
    "LinuxContainerConfig": [("resources", 1, "LinuxContainerResources"),
                             ("security_context", 2, "LinuxContainerSecurityContext")],
    "ContainerMetadata": [("name", 1, "string"), ("attempt", 2, "uint32")],
    "Device": [("container_path", 1, "string"), ("host_path", 2, "string"),
               ("permissions", 3, "string")],
    "ContainerConfig": [
        ("metadata", 1, "ContainerMetadata"), ("image", 2, "ImageSpec"),
        ("command", 3, "rep string"), ("args", 4, "rep string"), ("working_dir", 5, "string"),
        ("envs", 6, "rep KeyValue"), ("mounts", 7, "rep Mount"), ("devices", 8, "rep Device"),
        ("labels", 9, "map"), ("annotations", 10, "map"), ("log_path", 11, "string"),
        ("stdin", 12, "bool"), ("stdin_once", 13, "bool"), ("tty", 14, "bool"),
        ("linux", 15, "LinuxContainerConfig")],
    "CreateContainerRequest": [("pod_sandbox_id", 1, "string"), ("config", 2, "ContainerConfig"),
                               ("sandbox_config", 3, "PodSandboxConfig")],
    "CreateContainerResponse": [("container_id", 1, "string")],
    "StartContainerRequest": [("container_id", 1, "string")],
    "StartContainerResponse": [],
    "StopContainerRequest": [("container_id", 1, "string"), ("timeout", 2, "int64")],
    "StopContainerResponse": [],
    "RemoveContainerRequest": [("container_id", 1, "string")],
    "RemoveContainerResponse": [],
    "ContainerStatusRequest": [("container_id", 1, "string"), ("verbose", 2, "bool")],
    "ContainerStatus": [("id", 1, "string"), ("metadata", 2, "ContainerMetadata"),
                        ("state", 3, "int32"), ("created_at", 4, "int64"),
                        ("started_at", 5, "int64"), ("finished_at", 6, "int64"),
                        ("exit_code", 7, "int32"), ("image", 8, "ImageSpec"),
                        ("image_ref", 9, "string"), ("reason", 10, "string"),
                        ("message", 11, "string"), ("log_path", 15, "string")],
    "ContainerStatusResponse": [("status", 1, "ContainerStatus"), ("info", 2, "map")],
    "ExecSyncRequest": [("container_id", 1, "string"), ("cmd", 2, "rep string"),
                        ("timeout", 3, "int64")],
    "ExecSyncResponse": [("stdout", 1, "bytes"), ("stderr", 2, "bytes"),
                         ("exit_code", 3, "int32")],
    "ContainerFilter": [("id", 1, "string"), ("pod_sandbox_id", 3, "string")],
    "ListContainersRequest": [("filter", 1, "ContainerFilter")],
    "Container": [("id", 1, "string"), ("pod_sandbox_id", 2, "string"),
                  ("metadata", 3, "ContainerMetadata"), ("state", 6, "int32")],
    "ListContainersResponse": [("containers", 1, "rep Container")],
    "StatusRequest": [("verbose", 1, "bool")],
    "RuntimeCondition": [("type", 1, "string"), ("status", 2, "bool"),
                         ("reason", 3, "string"), ("message", 4, "string")],
    "RuntimeStatus": [("conditions", 1, "rep RuntimeCondition")],
    "StatusResponse": [("status", 1, "RuntimeStatus"), ("info", 2, "map")],
    "ImageStatusRequest": [("image", 1, "ImageSpec"), ("verbose", 2, "bool")],
    "Image": [("id", 1, "string"), ("repo_tags", 2, "rep string"),
              ("repo_digests", 3, "rep string"), ("size", 4, "uint64")],
    "ImageStatusResponse": [("image", 1, "Image"), ("info", 2, "map")],
}

IMAGE_METHODS = {"ImageStatus"}

SCALARS = {
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "uint32": descriptor_pb2.FieldDescriptorProto.TYPE_UINT32,
    "uint64": descriptor_pb2.FieldDescriptorProto.TYPE_UINT64,
    "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
}


def camel(name):
    return "".join(p.capitalize() for p in name.split("_"))


def add_field(msg, name, number, kind):
    f = msg.field.add(name=name, number=number, json_name=name)
    f.label = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
    if kind == "map":
        # map<string, string>: a repeated nested entry message, as protoc makes it.
        entry = msg.nested_type.add(name=camel(name) + "Entry")
        entry.options.map_entry = True
        for n, num in (("key", 1), ("value", 2)):
            e = entry.field.add(name=n, number=num, json_name=n,
                                type=SCALARS["string"])
            e.label = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
        f.label = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
        f.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
        f.type_name = ".%s.%s.%s" % (PACKAGE, msg.name, entry.name)
        return
    if kind.startswith("rep "):
        f.label = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
        kind = kind[4:]
    if kind in SCALARS:
        f.type = SCALARS[kind]
    else:
        f.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
        f.type_name = ".%s.%s" % (PACKAGE, kind)


def classes():
    fdp = descriptor_pb2.FileDescriptorProto(name="ajtest_cri.proto", package=PACKAGE,
                                             syntax="proto3")
    for name, fields in MESSAGES.items():
        msg = fdp.message_type.add(name=name)
        for fname, number, kind in fields:
            add_field(msg, fname, number, kind)
    made = message_factory.GetMessages([fdp])
    return {name.split(".")[-1]: cls for name, cls in made.items()}


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    sock, method = sys.argv[1], sys.argv[2]
    request = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
    msgs = classes()
    req_cls, resp_cls = msgs[method + "Request"], msgs[method + "Response"]
    service = "ImageService" if method in IMAGE_METHODS else "RuntimeService"
    req = json_format.ParseDict(request, req_cls())
    with grpc.insecure_channel("unix://" + sock) as ch:
        call = ch.unary_unary("/%s.%s/%s" % (PACKAGE, service, method),
                              request_serializer=req_cls.SerializeToString,
                              response_deserializer=resp_cls.FromString)
        try:
            resp = call(req, timeout=120)
        except grpc.RpcError as e:
            print("%s: %s" % (e.code().name, e.details()), file=sys.stderr)
            sys.exit(1)
    print(json_format.MessageToJson(resp, preserving_proto_field_name=True,
                                    including_default_value_fields=True))


if __name__ == "__main__":
    main()
