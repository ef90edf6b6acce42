"""The kind dictionary: shipped entries, lookups with suggestions, extensions and their validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from okt.codegen import dictionary, errors

REQUIRED_KINDS = [
    "ConfigMap",
    "Secret",
    "Service",
    "ServiceAccount",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
    "Pod",
    "PersistentVolumeClaim",
    "Ingress",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "HorizontalPodAutoscaler",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
]


@pytest.mark.parametrize(
    ("kind", "api_version", "plural", "namespaced", "base", "hashed"),
    [
        ("ConfigMap", "v1", "configmaps", True, "MutableResource", ("data", "binaryData", "immutable")),
        ("Secret", "v1", "secrets", True, "SecretResource", ("data", "stringData", "type")),
        ("Service", "v1", "services", True, "ServiceResource", ("spec",)),
        (
            "ServiceAccount",
            "v1",
            "serviceaccounts",
            True,
            "Resource",
            ("automountServiceAccountToken", "imagePullSecrets"),
        ),
        ("Deployment", "apps/v1", "deployments", True, "DeploymentResource", ("spec",)),
        ("StatefulSet", "apps/v1", "statefulsets", True, "StatefulSetResource", ("spec",)),
        ("Ingress", "networking.k8s.io/v1", "ingresses", True, "MutableResource", ("spec",)),
        ("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", True, "MutableResource", ("spec",)),
        ("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", True, "MutableResource", ("spec",)),
        ("HorizontalPodAutoscaler", "autoscaling/v2", "horizontalpodautoscalers", True, "MutableResource", ("spec",)),
        ("CronJob", "batch/v1", "cronjobs", True, "MutableResource", ("spec",)),
        ("Job", "batch/v1", "jobs", True, "Resource", ("spec",)),
        ("Role", "rbac.authorization.k8s.io/v1", "roles", True, "MutableResource", ("rules",)),
        (
            "RoleBinding",
            "rbac.authorization.k8s.io/v1",
            "rolebindings",
            True,
            "MutableResource",
            ("roleRef", "subjects"),
        ),
        (
            "ClusterRole",
            "rbac.authorization.k8s.io/v1",
            "clusterroles",
            False,
            "MutableResource",
            ("rules", "aggregationRule"),
        ),
        (
            "ClusterRoleBinding",
            "rbac.authorization.k8s.io/v1",
            "clusterrolebindings",
            False,
            "MutableResource",
            ("roleRef", "subjects"),
        ),
    ],
)
def test_shipped_entries_target_current_api_versions(
    kind: str, api_version: str, plural: str, namespaced: bool, base: str, hashed: tuple[str, ...]
) -> None:
    spec = dictionary.lookup(kind)
    assert (spec.api_version, spec.plural, spec.namespaced, spec.base, spec.hashed) == (
        api_version,
        plural,
        namespaced,
        base,
        hashed,
    )


def test_shipped_dictionary_has_every_required_kind() -> None:
    assert set(REQUIRED_KINDS) <= {spec.kind for spec in dictionary.builtin()}


@pytest.mark.parametrize(
    ("base", "mutable"), [("Resource", False), ("MutableResource", True), ("SecretResource", True)]
)
def test_only_the_resource_base_is_create_delete_only(base: str, mutable: bool) -> None:
    spec = dictionary.KindSpec.model_validate(
        {
            "kind": "Thing",
            "apiVersion": "example.com/v1",
            "plural": "things",
            "namespaced": True,
            "base": base,
            "hashed": [],
        }
    )
    assert spec.mutable is mutable
    assert (spec.group, spec.version) == ("example.com", "v1")


@pytest.mark.parametrize(
    ("asked", "found"), [("Deployment", "Deployment"), ("deployment", "Deployment"), ("CONFIGMAP", "ConfigMap")]
)
def test_lookup_ignores_letter_case(asked: str, found: str) -> None:
    assert dictionary.lookup(asked).kind == found
    assert asked in dictionary.builtin()


@pytest.mark.parametrize(
    ("asked", "message"),
    [
        ("Deploymnet", "unknown kind 'Deploymnet' (did you mean: Deployment?)"),
        ("Servce", "unknown kind 'Servce' (did you mean: Service?)"),
        ("Rol", "unknown kind 'Rol' (did you mean: Role?)"),
        (
            "Gadget",
            "unknown kind 'Gadget' (see `okt gen resource --list` for the known kinds, "
            "or add it with --dictionary FILE)",
        ),
    ],
)
def test_unknown_kind_lists_close_matches(asked: str, message: str) -> None:
    with pytest.raises(errors.CodegenError) as caught:
        dictionary.lookup(asked)
    assert str(caught.value) == message
    assert asked not in dictionary.builtin()


def test_extension_adds_a_kind_and_overrides_only_the_fields_it_sets(tmp_path: Path) -> None:
    extension = tmp_path / "extra.yaml"
    extension.write_text(
        "kinds:\n"
        "  PodDisruptionBudget:\n"
        "    apiVersion: policy/v1beta1\n"
        "  Certificate:\n"
        "    apiVersion: cert-manager.io/v1\n"
        "    plural: certificates\n"
        "    namespaced: true\n"
        "    base: MutableResource\n"
        "    hashed: [spec]\n"
    )
    extended = dictionary.load([extension])
    assert extended.lookup("PodDisruptionBudget").api_version == "policy/v1beta1"
    assert extended.lookup("PodDisruptionBudget").plural == "poddisruptionbudgets"
    assert extended.lookup("Certificate").group == "cert-manager.io"
    assert extended.sources == (dictionary.BUILTIN_PATH, extension)
    assert dictionary.builtin().lookup("PodDisruptionBudget").api_version == "policy/v1", "the shipped one is unchanged"


def test_later_extensions_win(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("kinds:\n  Service:\n    hashed: [spec, type]\n")
    second.write_text("kinds:\n  Service:\n    hashed: [spec]\n")
    assert dictionary.load([first, second]).lookup("Service").hashed == ("spec",)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("kinds: [1\n", "is not valid YAML: ", id="invalid-yaml"),
        pytest.param("kinds: []\n", "must be a mapping with one key, 'kinds' (kind name -> entry)", id="not-a-mapping"),
        pytest.param("widgets: {}\n", "must be a mapping with one key, 'kinds' (kind name -> entry)", id="wrong-key"),
        pytest.param(
            "kinds:\n  my-kind: {}\n", "'my-kind' is not a kind name (CamelCase, like ConfigMap)", id="bad-name"
        ),
        pytest.param(
            "kinds:\n  Thing: 3\n", "kind Thing: the entry must be a mapping of fields", id="entry-not-mapping"
        ),
        pytest.param(
            "kinds:\n  Thing:\n    apiVersion: v1\n",
            "kind Thing: plural: Field required (and 3 more)",
            id="missing-fields",
        ),
        pytest.param("kinds:\n  Service:\n    base: Mutable\n", "kind Service: base: Input should be ", id="bad-base"),
        pytest.param(
            "kinds:\n  Service:\n    apiVersion: apps/v1beta\n",
            "kind Service: apiVersion: String should match pattern",
            id="bad-api-version",
        ),
        pytest.param(
            "kinds:\n  Service:\n    hashed: [spec, spec]\n",
            "kind Service: hashed: Value error, listed twice: spec",
            id="duplicate-hashed",
        ),
        pytest.param(
            "kinds:\n  Service:\n    hashed: [metadata]\n",
            "kind Service: hashed: Value error, 'metadata' cannot be hashed (okt manages it)",
            id="metadata-hashed",
        ),
        pytest.param(
            "kinds:\n  Service:\n    hashed: [spec.ports]\n",
            "kind Service: hashed: Value error, 'spec.ports' is not a top-level field name",
            id="nested-hashed",
        ),
        pytest.param(
            "kinds:\n  Service:\n    colour: blue\n",
            "kind Service: colour: Extra inputs are not permitted",
            id="unknown-field",
        ),
        pytest.param(
            "kinds:\n  Service:\n    example: " + "x" * 79 + "\n",
            "kind Service: example: Value error, must be one non-empty line of Python of at most 78 characters",
            id="long-example",
        ),
    ],
)
def test_invalid_extension_is_one_line_naming_file_kind_and_field(text: str, message: str, tmp_path: Path) -> None:
    extension = tmp_path / "extra.yaml"
    extension.write_text(text)
    with pytest.raises(errors.CodegenError) as caught:
        dictionary.load([extension])
    assert str(caught.value).startswith(f"dictionary {extension}")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_missing_extension_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(errors.CodegenError, match=r"^cannot read dictionary .*nope\.yaml: No such file or directory$"):
        dictionary.load([tmp_path / "nope.yaml"])


def test_entries_round_trip_through_their_file_form() -> None:
    for spec in dictionary.builtin():
        assert dictionary.KindSpec.model_validate({**spec.to_entry(), "kind": spec.kind}) == spec
