"""Behaviour of the pure parts of okt.testing: ports, token identities, asset lookup and the reflect2 fix.

The reflect2 fixtures below reproduce the parts of ``github.com/modern-go/reflect2`` v1.0.1 (as vendored by
Kubernetes 1.20.2) that :func:`okt.testing.build.patch_reflect2` rewrites: the two-field ``hiter`` and the
two-argument ``mapiterinit`` in ``unsafe_link.go``, and the iterator constructor in ``unsafe_map.go``.
"""

from __future__ import annotations

import pathlib
import re
import socket
import stat

import pytest

from okt.testing import build, envtest

ORIGINAL_UNSAFE_LINK = """\
package reflect2

import "unsafe"

//go:linkname unsafe_New reflect.unsafe_New
func unsafe_New(rtype unsafe.Pointer) unsafe.Pointer

//go:linkname mapassign reflect.mapassign
//go:noescape
func mapassign(rtype unsafe.Pointer, m unsafe.Pointer, key, val unsafe.Pointer)

//go:linkname mapaccess reflect.mapaccess
//go:noescape
func mapaccess(rtype unsafe.Pointer, m unsafe.Pointer, key unsafe.Pointer) (val unsafe.Pointer)

// m escapes into the return value, but the caller of mapiterinit
// doesn't let the return value escape.
//go:noescape
//go:linkname mapiterinit reflect.mapiterinit
func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer) *hiter

//go:noescape
//go:linkname mapiternext reflect.mapiternext
func mapiternext(it *hiter)

// A hash iteration structure.
// If you modify hiter, also change cmd/internal/gc/reflect.go to indicate
// the layout of this structure.
type hiter struct {
	key   unsafe.Pointer
	value unsafe.Pointer
	// rest fields are ignored
}

// add returns p+x.
func add(p unsafe.Pointer, x uintptr, whySafe string) unsafe.Pointer {
	return unsafe.Pointer(uintptr(p) + x)
}
"""

ORIGINAL_UNSAFE_MAP = """\
package reflect2

import (
	"reflect"
	"unsafe"
)

func (type2 *UnsafeMapType) Iterate(obj interface{}) MapIterator {
	return type2.UnsafeIterate(unpackEFace(obj).data)
}

func (type2 *UnsafeMapType) UnsafeIterate(obj unsafe.Pointer) MapIterator {
	return &UnsafeMapIterator{
		hiter:      mapiterinit(type2.rtype, *(*unsafe.Pointer)(obj)),
		pKeyRType:  type2.pKeyRType,
		pElemRType: type2.pElemRType,
	}
}

type UnsafeMapIterator struct {
	*hiter
	pKeyRType  unsafe.Pointer
	pElemRType unsafe.Pointer
}

func (iter *UnsafeMapIterator) HasNext() bool {
	return iter.key != nil
}
"""

RUNTIME_HITER_FIELDS = [
    "key",
    "value",
    "t",
    "h",
    "buckets",
    "bptr",
    "overflow",
    "oldoverflow",
    "startBucket",
    "offset",
    "wrapped",
    "B",
    "i",
    "bucket",
    "checkBucket",
]


def vendored_reflect2(
    root: pathlib.Path, link: str = ORIGINAL_UNSAFE_LINK, umap: str = ORIGINAL_UNSAFE_MAP
) -> pathlib.Path:
    """A Kubernetes source tree holding only the two reflect2 files; returns the reflect2 package directory."""
    package = root / "vendor" / "github.com" / "modern-go" / "reflect2"
    package.mkdir(parents=True)
    (package / "unsafe_link.go").write_text(link)
    (package / "unsafe_map.go").write_text(umap)
    return package


def hiter_fields(go_source: str) -> list[str]:
    match = re.search(r"type hiter struct \{\n(.*?)\n\}", go_source, re.DOTALL)
    assert match is not None, "no hiter struct"
    lines = (line.strip() for line in match.group(1).splitlines())
    return [line.split()[0] for line in lines if line and not line.startswith("//")]


# -- free_port ----------------------------------------------------------------------------------------------------


def test_free_port_returns_a_port_that_can_be_bound_on_loopback_right_away() -> None:
    port = envtest.free_port()

    assert 1024 <= port <= 65535
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()
        assert sock.getsockname() == ("127.0.0.1", port)


def test_free_ports_are_different_ports_each_free_on_loopback() -> None:
    ports = envtest.free_ports(20)

    assert len(set(ports)) == 20
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))


def test_free_port_hands_out_different_ports_across_calls() -> None:
    ports = {envtest.free_port() for _ in range(20)}

    assert len(ports) > 1


# -- TokenUser ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("namespace", "name"),
    [("default", "operator"), ("memcached-system", "memcached-operator"), ("a", "b")],
)
def test_a_service_account_token_user_carries_the_identity_the_apiserver_gives_that_service_account(
    namespace: str, name: str
) -> None:
    user = envtest.TokenUser.service_account(namespace, name)

    assert user.name == f"system:serviceaccount:{namespace}:{name}"
    assert user.groups == ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")
    assert re.fullmatch(r"[0-9a-f]{32}", user.token)


def test_each_service_account_token_user_gets_its_own_random_token() -> None:
    tokens = {envtest.TokenUser.service_account("default", "operator").token for _ in range(10)}

    assert len(tokens) == 10


def test_a_token_user_is_an_immutable_value() -> None:
    user = envtest.TokenUser("alice", "secret-token", ("developers",))

    with pytest.raises(AttributeError):
        user.name = "mallory"  # type: ignore[misc]
    assert user == envtest.TokenUser("alice", "secret-token", ("developers",))


def test_the_admin_is_the_first_token_user_and_declared_users_follow_it() -> None:
    extra = envtest.TokenUser.service_account("default", "operator")

    plane = envtest.ControlPlane(users=[extra])

    assert plane.users[0].name == envtest.ADMIN_USER
    assert plane.users[0].groups == ("system:masters",)
    assert plane.token == plane.users[0].token
    assert plane.users[1:] == (extra,)


# -- finding the binaries -----------------------------------------------------------------------------------------


def fake_binaries(directory: pathlib.Path, names: tuple[str, ...] = build.BINARIES) -> pathlib.Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = directory / name
        path.write_text("#!/bin/sh\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return directory


@pytest.mark.parametrize("variable", ["OKT_ENVTEST_ASSETS", "KUBEBUILDER_ASSETS"])
def test_an_assets_variable_pointing_at_both_binaries_is_used_as_is(
    variable: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OKT_ENVTEST_ASSETS", raising=False)
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    assets = fake_binaries(tmp_path / "bin")
    monkeypatch.setenv(variable, str(assets))

    assert envtest.find_assets(build_if_missing=False) == assets


@pytest.mark.parametrize("present", [(), ("kube-apiserver",), ("kube-controller-manager",)])
def test_an_assets_variable_pointing_at_an_incomplete_directory_is_an_error_naming_it(
    present: tuple[str, ...], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assets = fake_binaries(tmp_path / "bin", present)
    monkeypatch.setenv("OKT_ENVTEST_ASSETS", str(assets))

    with pytest.raises(envtest.ControlPlaneError, match=re.escape(f"OKT_ENVTEST_ASSETS={assets}")):
        envtest.find_assets(build_if_missing=False)


def test_without_binaries_and_without_building_the_error_says_how_to_build(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OKT_ENVTEST_ASSETS", raising=False)
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.setenv("OKT_ENVTEST_CACHE", str(tmp_path / "cache"))

    with pytest.raises(envtest.ControlPlaneError, match="okt envtest build"):
        envtest.find_assets(build_if_missing=False)


def test_the_cached_build_is_found_without_any_variable(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OKT_ENVTEST_ASSETS", raising=False)
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.setenv("OKT_ENVTEST_CACHE", str(tmp_path / "cache"))
    cached = fake_binaries(build.cached_assets())

    assert envtest.find_assets(build_if_missing=False) == cached


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({"OKT_ENVTEST_CACHE": "/srv/okt-cache", "XDG_CACHE_HOME": "/xdg"}, "/srv/okt-cache"),
        ({"XDG_CACHE_HOME": "/xdg"}, "/xdg/okt/envtest"),
    ],
)
def test_the_build_cache_honours_okt_envtest_cache_then_xdg_cache_home(
    environment: dict[str, str], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OKT_ENVTEST_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    assert build.cache_root() == pathlib.Path(expected)
    assert build.cached_assets().parent == pathlib.Path(expected)
    assert build.cached_assets().name.startswith(build.KUBE_VERSION)


def test_the_build_cache_defaults_to_the_home_cache_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OKT_ENVTEST_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    assert build.cache_root() == pathlib.Path.home() / ".cache" / "okt" / "envtest"


# -- the reflect2 fix ---------------------------------------------------------------------------------------------


def test_the_original_reflect2_declares_only_two_hiter_fields() -> None:
    assert hiter_fields(ORIGINAL_UNSAFE_LINK) == ["key", "value"]


def test_patching_reflect2_gives_hiter_the_full_runtime_layout_in_order(tmp_path: pathlib.Path) -> None:
    package = vendored_reflect2(tmp_path)

    assert build.patch_reflect2(tmp_path) is True

    assert hiter_fields((package / "unsafe_link.go").read_text()) == RUNTIME_HITER_FIELDS


def test_patching_reflect2_declares_the_three_argument_mapiterinit(tmp_path: pathlib.Path) -> None:
    package = vendored_reflect2(tmp_path)

    build.patch_reflect2(tmp_path)

    link = (package / "unsafe_link.go").read_text()
    assert "func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer, it *hiter)\n" in link
    assert "func mapiterinit(rtype unsafe.Pointer, m unsafe.Pointer) *hiter" not in link
    assert "//go:linkname mapiterinit reflect.mapiterinit\nfunc mapiterinit(" in link


def test_patching_reflect2_keeps_everything_around_the_rewritten_declarations(tmp_path: pathlib.Path) -> None:
    package = vendored_reflect2(tmp_path)

    build.patch_reflect2(tmp_path)

    link = (package / "unsafe_link.go").read_text()
    for untouched in (
        "func mapiternext(it *hiter)",
        "// the layout of this structure.\ntype hiter struct {",
        "}\n\n// add returns p+x.\nfunc add(",
        "func mapaccess(rtype unsafe.Pointer, m unsafe.Pointer, key unsafe.Pointer) (val unsafe.Pointer)",
    ):
        assert untouched in link
    assert link.count("type hiter struct {") == 1


def test_patching_reflect2_makes_the_iterator_own_its_hiter_and_pass_it_to_mapiterinit(tmp_path: pathlib.Path) -> None:
    package = vendored_reflect2(tmp_path)

    build.patch_reflect2(tmp_path)

    umap = (package / "unsafe_map.go").read_text()
    assert (
        "func (type2 *UnsafeMapType) UnsafeIterate(obj unsafe.Pointer) MapIterator {\n"
        "\tvar it hiter\n"
        "\tmapiterinit(type2.rtype, *(*unsafe.Pointer)(obj), &it)\n"
        "\treturn &UnsafeMapIterator{\n"
        "\t\thiter:      &it,\n"
        "\t\tpKeyRType:  type2.pKeyRType,\n"
        "\t\tpElemRType: type2.pElemRType,\n"
        "\t}\n"
        "}\n"
    ) in umap
    assert umap.count("mapiterinit(") == 1


def test_patching_reflect2_twice_changes_nothing_the_second_time(tmp_path: pathlib.Path) -> None:
    package = vendored_reflect2(tmp_path)
    build.patch_reflect2(tmp_path)
    once = {path.name: path.read_text() for path in package.iterdir()}

    assert build.patch_reflect2(tmp_path) is False

    assert {path.name: path.read_text() for path in package.iterdir()} == once


@pytest.mark.parametrize(
    ("link", "umap", "complaint"),
    [
        (
            ORIGINAL_UNSAFE_LINK.replace(") *hiter\n", ") (it *hiter)\n"),
            ORIGINAL_UNSAFE_MAP,
            "reflect2 layout not recognised in .*unsafe_link.go",
        ),
        (
            ORIGINAL_UNSAFE_LINK,
            ORIGINAL_UNSAFE_MAP.replace("hiter:      mapiterinit(", "hiter: mapiterinit("),
            "reflect2 iterator not recognised in .*unsafe_map.go",
        ),
    ],
    ids=["unknown mapiterinit declaration", "unknown iterator constructor"],
)
def test_an_unrecognised_reflect2_is_an_error_that_leaves_both_files_untouched(
    link: str, umap: str, complaint: str, tmp_path: pathlib.Path
) -> None:
    package = vendored_reflect2(tmp_path, link, umap)

    with pytest.raises(build.BuildError, match=complaint):
        build.patch_reflect2(tmp_path)

    assert (package / "unsafe_link.go").read_text() == link
    assert (package / "unsafe_map.go").read_text() == umap


_OPENAPI_ORIGINAL = """func (t *typeValidator) Validate(data interface{}) *Result {
	result := new(Result)
	if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {
		return result
	}
}
"""


def test_the_openapi_zero_check_patch_treats_only_null_as_null_and_is_idempotent(tmp_path: pathlib.Path) -> None:
    for relative in build.OPENAPI_TYPE_VALIDATORS:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(_OPENAPI_ORIGINAL)

    assert build.patch_openapi_zero_check(tmp_path) is True
    assert build.patch_openapi_zero_check(tmp_path) is False
    for relative in build.OPENAPI_TYPE_VALIDATORS:
        text = (tmp_path / relative).read_text()
        assert "\tif data == nil {\n" in text
        assert "reflect.DeepEqual" not in text


def test_an_unrecognised_openapi_validator_fails_the_build_step(tmp_path: pathlib.Path) -> None:
    for relative in build.OPENAPI_TYPE_VALIDATORS:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text("package validate\n")
    with pytest.raises(build.BuildError, match="not recognised"):
        build.patch_openapi_zero_check(tmp_path)


_OWNER_ADMISSION_ORIGINAL = (
    "func (a *gcPermissionsEnforcement) ownerRefToDeleteAttributeRecords(ref metav1.OwnerReference, "
    "attributes admission.Attributes) ([]authorizer.AttributesRecord, error) {\n"
    "\tvar ret []authorizer.AttributesRecord\n"
    "\tgroupVersion, err := schema.ParseGroupVersion(ref.APIVersion)\n"
    "\tif err != nil {\n"
    "\t\treturn ret, err\n"
    "\t}\n"
    "\tmappings, err := a.restMapper.RESTMappings("
    "schema.GroupKind{Group: groupVersion.Group, Kind: ref.Kind}, groupVersion.Version)\n"
    "\tif err != nil {\n"
    "\t\treturn ret, err\n"
    "\t}\n"
    "\tfor _, mapping := range mappings {\n"
)


def _write_owner_admission(source: pathlib.Path, text: str) -> pathlib.Path:
    path = source / build.OWNER_REFERENCE_ADMISSION
    path.parent.mkdir(parents=True)
    path.write_text(text)
    return path


def test_the_owner_reference_admission_resets_its_mapper_and_looks_an_unknown_kind_up_once_more(
    tmp_path: pathlib.Path,
) -> None:
    path = _write_owner_admission(tmp_path, _OWNER_ADMISSION_ORIGINAL)

    assert build.patch_owner_reference_admission(tmp_path) is True

    text = path.read_text()
    lookup = "\tmappings, err := a.restMapper.RESTMappings(groupKind, groupVersion.Version)\n"
    again = "\t\tmappings, err = a.restMapper.RESTMappings(groupKind, groupVersion.Version)\n"
    reset = "\tif resettable, ok := a.restMapper.(interface{ Reset() }); ok && meta.IsNoMatchError(err) {\n"
    assert text.index(lookup) < text.index(reset) < text.index("\t\tresettable.Reset()\n") < text.index(again)
    assert text.index(again) < text.index("\tif err != nil {\n\t\treturn ret, err\n\t}\n\tfor _, mapping")
    assert text.startswith(_OWNER_ADMISSION_ORIGINAL.split("\tmappings, err", maxsplit=1)[0])
    assert text.endswith("\tfor _, mapping := range mappings {\n")


def test_patching_the_owner_reference_admission_twice_changes_nothing_the_second_time(tmp_path: pathlib.Path) -> None:
    path = _write_owner_admission(tmp_path, _OWNER_ADMISSION_ORIGINAL)
    build.patch_owner_reference_admission(tmp_path)
    patched = path.read_text()

    assert build.patch_owner_reference_admission(tmp_path) is False
    assert path.read_text() == patched


def test_an_unrecognised_owner_reference_admission_fails_the_build_step_and_stays_untouched(
    tmp_path: pathlib.Path,
) -> None:
    path = _write_owner_admission(tmp_path, "package gc\n")

    with pytest.raises(build.BuildError, match="owner reference admission not recognised"):
        build.patch_owner_reference_admission(tmp_path)
    assert path.read_text() == "package gc\n"


def test_a_component_that_fails_to_start_is_told_with_a_log_that_outlives_the_plane(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The message named the log in the plane's directory, which the failed start removed at once.
    etcd = tmp_path / "etcd"
    etcd.write_text("#!/bin/sh\necho 'etcd: unknown flag --quota-backend-bytes' >&2\nexit 3\n")
    etcd.chmod(0o755)
    monkeypatch.setenv("OKT_ETCD", str(etcd))
    plane = envtest.ControlPlane(assets=tmp_path)

    with pytest.raises(envtest.ControlPlaneError) as failed:
        plane.start()

    named = re.search(r"\(log: (.+)\)$", str(failed.value))
    assert named is not None, failed.value
    log = pathlib.Path(named.group(1))
    try:
        assert log.read_text() == "etcd: unknown flag --quota-backend-bytes\n"
    finally:
        log.unlink(missing_ok=True)


def test_a_plane_with_a_node_runs_the_controllers_its_pods_and_services_need() -> None:
    """Without the endpoint controller a Service has no Endpoints: the API server's Service proxy (``ctx.http``'s
    default route) answers ``services "NAME" not found`` for a Service that exists, its Pod ready."""
    plane = envtest.ControlPlane(node=True)

    assert set(plane.controllers) == {*envtest.DEFAULT_CONTROLLERS, "statefulset", "endpoint", "root-ca-cert-publisher"}


@pytest.mark.parametrize(
    ("options", "controllers"),
    [
        ({}, envtest.DEFAULT_CONTROLLERS),
        ({"node": True, "controllers": ("namespace",)}, ("namespace",)),
        ({"node": True, "controllers": ()}, ()),
    ],
)
def test_controllers_given_are_the_ones_that_run_with_or_without_a_node(
    options: dict[str, object], controllers: tuple[str, ...]
) -> None:
    assert envtest.ControlPlane(**options).controllers == controllers  # type: ignore[arg-type]
