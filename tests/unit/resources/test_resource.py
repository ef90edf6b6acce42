"""Behaviour of okt.resources.resource: how a child's desired state is built and what identifies it."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from okt import errors
from okt.kube import objects
from okt.resources import resource, templating

CR = objects.CustomResource(
    {
        "apiVersion": "test.okt.io/v1",
        "kind": "Widget",
        "metadata": {"name": "demo", "namespace": "team-a", "uid": "uid-1", "generation": 3},
        "spec": {"size": 2, "greeting": "hello"},
    }
)


class Config(resource.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ name }}-config
  namespace: {{ namespace }}
  labels:
    tier: {{ tier }}
data:
  greeting: {{ cr.spec.greeting }}
  size: "{{ cr.spec.size }}"
"""


class Untemplated(resource.Resource):
    api_version = "v1"
    kind = "ServiceAccount"


class ServiceAccountModel(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(populate_by_name=True)

    api_version: str = pydantic.Field("v1", alias="apiVersion")
    kind: str = "ServiceAccount"
    metadata: dict[str, Any]
    automount: bool | None = pydantic.Field(None, alias="automountServiceAccountToken")


# --- rendering ------------------------------------------------------------------------------------------------------


def test_render_template_returns_the_yaml_mapping_with_the_variables_substituted() -> None:
    rendered = templating.render_template("name: {{ who }}\nitems: {{ items | to_yaml }}\n", {"who": "x", "items": [1]})

    assert rendered == {"name": "x", "items": [1]}


@pytest.mark.parametrize(
    ("template", "variables", "message"),
    [
        pytest.param("name: {{ missing }}", {}, "template error", id="undefined-variable"),
        pytest.param("name: {% if %}", {}, "template error", id="syntax-error"),
        pytest.param("a: [1, 2", {}, "not valid YAML", id="bad-yaml"),
        pytest.param("- a\n- b", {}, "not a YAML mapping", id="a-list"),
        pytest.param("just text", {}, "not a YAML mapping", id="a-scalar"),
        pytest.param("", {}, "not a YAML mapping", id="empty"),
    ],
)
def test_render_template_reports_each_failure_as_a_mutation_error(
    template: str, variables: dict[str, Any], message: str
) -> None:
    with pytest.raises(errors.MutationError, match=message):
        templating.render_template(template, variables)


# --- construction ---------------------------------------------------------------------------------------------------


def test_a_template_is_rendered_with_the_cr_its_name_namespace_and_the_parameters() -> None:
    config = Config(CR, params={"tier": "gold"})

    assert config.desired == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "demo-config", "namespace": "team-a", "labels": {"tier": "gold"}},
        "data": {"greeting": "hello", "size": "2"},
    }
    assert (config.name, config.namespace) == ("demo-config", "team-a")
    assert config.live is None


def test_explicit_name_and_namespace_override_the_rendered_ones() -> None:
    config = Config(CR, name="other", namespace="team-b", params={"tier": "gold"})

    assert config.desired["metadata"]["name"] == "other"
    assert config.desired["metadata"]["namespace"] == "team-b"
    assert config.key == ("v1", "ConfigMap", "team-b", "other")


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"metadata": {"name": "robot"}, "automountServiceAccountToken": False}, id="dict"),
        pytest.param(ServiceAccountModel(metadata={"name": "robot"}, automount=False), id="pydantic-model"),
    ],
)
def test_a_body_is_used_as_is_with_kind_and_the_crs_namespace_filled_in(body: Any) -> None:
    account = Untemplated(CR, body=body)

    assert account.desired == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "robot", "namespace": "team-a"},
        "automountServiceAccountToken": False,
    }


def test_a_dict_body_is_copied_so_mutations_never_reach_the_callers_dict() -> None:
    body = {"metadata": {"name": "robot", "labels": {"a": "1"}}}

    account = Untemplated(CR, body=body)
    account.desired["metadata"]["labels"]["a"] = "2"

    assert body == {"metadata": {"name": "robot", "labels": {"a": "1"}}}


def test_a_namespace_in_the_body_is_kept_when_none_is_given() -> None:
    account = Untemplated(CR, body={"metadata": {"name": "robot", "namespace": "elsewhere"}})

    assert account.namespace == "elsewhere"


def test_a_resource_without_cr_or_namespace_is_cluster_scoped() -> None:
    account = Untemplated(body={"metadata": {"name": "robot"}})

    assert account.namespace is None
    assert account.key == ("v1", "ServiceAccount", "", "robot")
    assert account.describe() == "ServiceAccount/robot"


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({}, id="no-template-no-body"),
        pytest.param({"body": {"metadata": {}}}, id="body-without-name"),
        pytest.param({"body": {"metadata": {"name": ""}}}, id="empty-name"),
    ],
)
def test_a_resource_without_a_name_is_refused(kwargs: dict[str, Any]) -> None:
    with pytest.raises(errors.MutationError, match=r"no metadata\.name"):
        Untemplated(CR, **kwargs)


@pytest.mark.parametrize(
    ("name", "namespace", "refused"),
    [
        pytest.param("web/status", "team-a", "not a valid object name", id="slash"),
        pytest.param("..", "team-a", "not a valid object name", id="dot-dot"),
        pytest.param("web%2Fstatus", "team-a", "not a valid object name", id="percent"),
        pytest.param("web", "Team_A", "not a valid namespace name", id="namespace-not-a-label"),
        pytest.param("web", "team-a/configmaps", "not a valid namespace name", id="namespace-with-slash"),
        pytest.param("web", "n" * 64, "not a valid namespace name", id="namespace-too-long"),
    ],
)
def test_a_name_or_namespace_that_cannot_address_one_object_is_an_invalid_spec(
    name: str, namespace: str, refused: str
) -> None:
    with pytest.raises(errors.InvalidSpec, match=refused):
        Untemplated(body={"metadata": {"name": name, "namespace": namespace}})


class NamedAfterSize(resource.MutableResource):
    api_version = "v1"
    kind = "ConfigMap"
    template = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ cr.spec.size }}
"""


def test_a_name_the_template_places_as_a_number_is_an_invalid_spec_that_says_to_quote_it() -> None:
    with pytest.raises(errors.InvalidSpec, match=r"metadata\.name 2 is a int, not a string: quote it"):
        NamedAfterSize(CR)


@pytest.mark.parametrize("name", ["system:controller:web", "web?x", "Web_1", "ünï"])
def test_a_name_only_some_kinds_refuse_is_left_to_the_server(name: str) -> None:
    assert Untemplated(body={"metadata": {"name": name}}).name == name


# --- identity -------------------------------------------------------------------------------------------------------


def test_describe_and_repr_name_kind_namespace_and_name() -> None:
    config = Config(CR, params={"tier": "gold"})

    assert config.describe() == "ConfigMap/team-a/demo-config"
    assert repr(config) == "<Config ConfigMap/team-a/demo-config>"


@pytest.mark.parametrize(
    ("field", "value"),
    [("name", "renamed"), ("namespace", "moved")],
)
def test_a_mutation_that_changes_name_or_namespace_is_refused(field: str, value: str) -> None:
    config = Config(CR, params={"tier": "gold"})
    config.desired["metadata"][field] = value

    with pytest.raises(errors.MutationError, match="may not change name/namespace"):
        config.check_identity()


def test_the_key_keeps_the_construction_identity_even_if_metadata_is_edited() -> None:
    config = Config(CR, params={"tier": "gold"})
    key = config.key
    config.desired["metadata"]["name"] = "renamed"

    assert config.key == key
    assert config.name == "demo-config"


def test_check_identity_accepts_mutations_of_everything_else() -> None:
    config = Config(CR, params={"tier": "gold"})
    config.desired["data"]["extra"] = "x"
    config.desired["metadata"]["labels"]["more"] = "y"

    config.check_identity()

    assert config.desired["data"]["extra"] == "x"


# --- hooks and defaults ---------------------------------------------------------------------------------------------


def test_the_default_hashable_ref_is_the_object_without_metadata_and_status_plus_its_labels() -> None:
    config = Config(CR, params={"tier": "gold"})
    config.desired["status"] = {"ignored": True}

    assert config.hashable_ref() == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "data": {"greeting": "hello", "size": "2"},
        "labels": {"tier": "gold"},
    }


def test_annotations_the_template_sets_are_hashed_so_dropping_one_changes_the_hash() -> None:
    config = Config(CR, params={"tier": "gold"})
    config.desired["metadata"]["annotations"] = {"note": "hashed"}

    assert config.hashable_ref()["annotations"] == {"note": "hashed"}


def test_the_default_hooks_leave_the_desired_state_untouched() -> None:
    config = Config(CR, params={"tier": "gold"})
    before = {**config.desired}

    config.mutate_with_cr(CR)
    config.mutate_with_initial_data()
    config.normalize()
    config.preserve_from_live({"spec": {"clusterIP": "10.0.0.1"}})

    assert config.desired == before


def test_rendering_the_same_text_twice_gives_equal_objects_that_never_share_state() -> None:
    template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }}\ndata:\n  key: value\n"

    first = templating.render_template(template, {"name": "same"})
    first["data"]["key"] = "changed by a mutation"
    second = templating.render_template(template, {"name": "same"})

    assert second == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "same"}, "data": {"key": "value"}}


def test_a_template_that_is_not_valid_jinja2_is_refused_when_its_class_is_defined_naming_the_class_and_line() -> None:
    with pytest.raises(ValueError, match=r"\.Broken\.template line 4: unexpected '}'"):

        class Broken(resource.MutableResource):
            api_version = "v1"
            kind = "ConfigMap"
            template = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name }\n"
