"""``okt gen webhooks`` and the conversion webhook of ``okt gen crd``: configurations naming exactly the webhooks a
reconciler declares, at the paths the server serves.

``golden/webhooks_memcached.yaml`` and ``golden/crd_multiversion.yaml`` pin the output; ``OKT_UPDATE_GOLDEN=1``
regenerates them (see ``test_codegen_resource.py``).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
import pydantic
import pytest
import yaml
from click.testing import CliRunner, Result

import okt
from okt.codegen import cli, crd, errors, webhooks, yamlout
from okt.reconciler import webhooks as declared
from okt.runtime import webhook_reviews
from okt.testing import FakeClient

GOLDEN = Path(__file__).parent / "golden"


class MemcachedSpec(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1)
    image: str


class MemcachedSpecAlpha(pydantic.BaseModel):
    size: int = pydantic.Field(ge=1)
    imageName: str  # noqa: N815 - the field's name in the API


def up(spec: MemcachedSpecAlpha) -> MemcachedSpec:
    return MemcachedSpec(size=spec.size, image=spec.imageName)


def down(spec: MemcachedSpec) -> MemcachedSpecAlpha:
    return MemcachedSpecAlpha(size=spec.size, imageName=spec.image)


class Memcached(okt.Reconciler):
    api_version = "cache.example.com/v1beta1"
    kind = "Memcached"
    spec_model = MemcachedSpec
    spec_models = {"v1alpha1": MemcachedSpecAlpha}
    converters = {("v1alpha1", "v1beta1"): up, ("v1beta1", "v1alpha1"): down}

    def default(self, obj: dict[str, Any]) -> Mapping[str, Any] | None:
        return obj


class Plain(okt.Reconciler):
    api_version = "cache.example.com/v1"
    kind = "Plain"


class Checked(Plain):
    kind = "Checked"

    def check(self, ctx: okt.Context) -> None:
        return None


def check_golden(path: Path, produced: str) -> None:
    if os.environ.get("OKT_UPDATE_GOLDEN") == "1":
        path.write_text(produced, encoding="utf-8")
    assert produced == path.read_text(encoding="utf-8")


def invoke(arguments: list[str], group: click.Group) -> Result:
    return CliRunner().invoke(group, arguments, catch_exceptions=False)


def loader(*classes: type[Any]) -> cli.ReconcilerLoader:
    return lambda target: list(classes)


def test_configurations_and_service_match_the_golden_file() -> None:
    documents = webhooks.webhooks_for_reconcilers(
        [Memcached, Checked],
        name="memcached-operator",
        client_config=webhooks.ClientConfig(service="memcached-operator-webhooks", namespace="ops", ca_bundle="Q0E="),
    )
    assert [d["kind"] for d in documents] == [
        "Service",
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ]
    check_golden(GOLDEN / "webhooks_memcached.yaml", yamlout.dump_all(documents))


def test_every_configured_path_is_one_the_server_serves() -> None:
    documents = webhooks.webhooks_for_reconcilers(
        [Memcached, Checked], name="x", client_config=webhooks.ClientConfig(url="https://127.0.0.1:9443")
    )
    urls = [hook["clientConfig"]["url"] for d in documents for hook in d.get("webhooks", [])]
    served = webhook_reviews.reviews_of([Memcached, Checked], FakeClient())
    assert sorted(url.removeprefix("https://127.0.0.1:9443") for url in urls) == sorted(
        path for path in served if not path.startswith("/convert/")
    )
    assert all("service" not in hook["clientConfig"] for d in documents for hook in d.get("webhooks", []))
    assert "Service" not in [d["kind"] for d in documents]


def test_what_a_reconciler_declares_decides_its_webhooks() -> None:
    purposes = {cls.__name__: [e.purpose for e in declared.endpoints(cls)] for cls in (Memcached, Plain, Checked)}
    assert purposes == {
        "Memcached": [declared.Purpose.VALIDATING, declared.Purpose.MUTATING, declared.Purpose.CONVERSION],
        "Plain": [],
        "Checked": [declared.Purpose.VALIDATING],
    }


def no_webhook() -> object:
    return webhooks.webhooks_for_reconcilers([Plain], name="x", client_config=webhooks.ClientConfig())


def bad_policy() -> object:
    config = webhooks.ClientConfig()
    return webhooks.webhooks_for_reconcilers([Checked], name="x", client_config=config, failure_policy="Maybe")


def plain_http() -> object:
    return webhooks.ClientConfig(url="http://127.0.0.1:9443")


@pytest.mark.parametrize(
    ("call", "message"),
    [(no_webhook, "no admission webhook"), (plain_http, "https://HOST[:PORT]"), (bad_policy, "invalid failure policy")],
)
def test_bad_input_is_one_clear_error(call: Any, message: str) -> None:
    with pytest.raises(errors.CodegenError, match=message.replace("[", r"\[").replace("]", r"\]")):
        call()


def test_a_multi_version_crd_stores_one_version_and_converts_through_the_webhook() -> None:
    config = webhooks.ClientConfig(url="https://127.0.0.1:9443", ca_bundle="Q0E=")
    definition = crd.crd_for_reconciler(Memcached, webhooks.conversion_client_config(Memcached, config))
    versions = definition["spec"]["versions"]
    assert [(v["name"], v["served"], v["storage"]) for v in versions] == [
        ("v1beta1", True, True),
        ("v1alpha1", True, False),
    ]
    assert set(versions[0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]) == {"size", "image"}
    assert set(versions[1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]) == {"size", "imageName"}
    assert definition["spec"]["conversion"] == {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"url": "https://127.0.0.1:9443/convert/memcached", "caBundle": "Q0E="},
            "conversionReviewVersions": ["v1"],
        },
    }
    check_golden(GOLDEN / "crd_multiversion.yaml", yamlout.dump_all([definition]))


def test_without_converters_a_crd_has_no_conversion_webhook() -> None:
    assert "conversion" not in crd.crd_for_reconciler(Plain)["spec"]


def test_gen_webhooks_reads_the_ca_bundle_and_passes_its_options(tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(b"-----BEGIN CERTIFICATE-----\n")
    group = cli.make_gen_group(loader(Checked))
    arguments = ["webhooks", "operator.py", "--namespace", "ops", "--ca-bundle", str(ca), "--failure-policy", "Ignore"]
    result = invoke(arguments, group)
    assert result.exit_code == 0, result.output
    service, validating = yaml.safe_load_all(result.stdout)
    assert service["metadata"] == {
        "name": "checked-operator-webhooks",
        "namespace": "ops",
        "labels": {"app.kubernetes.io/name": "checked-operator", "okt.io/operator": "checked-operator"},
    }
    (hook,) = validating["webhooks"]
    assert hook["failurePolicy"] == "Ignore"
    assert base64.b64decode(hook["clientConfig"]["caBundle"]) == ca.read_bytes()
    assert hook["clientConfig"]["service"] == {
        "name": "checked-operator-webhooks",
        "namespace": "ops",
        "path": "/validate/checked",
        "port": 443,
    }


def test_gen_webhooks_of_an_operator_without_webhooks_is_one_line_error() -> None:
    result = CliRunner().invoke(cli.make_gen_group(loader(Plain)), ["webhooks", "operator.py"])
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: Plain: no admission webhook to configure")


def test_gen_crd_takes_the_conversion_webhook_url() -> None:
    result = invoke(["crd", "operator.py", "--url", "https://127.0.0.1:9443"], cli.make_gen_group(loader(Memcached)))
    assert result.exit_code == 0, result.output
    (definition,) = yaml.safe_load_all(result.stdout)
    client_config = definition["spec"]["conversion"]["webhook"]["clientConfig"]
    assert client_config == {"url": "https://127.0.0.1:9443/convert/memcached"}


@pytest.mark.parametrize("url", ["https://127.0.0.1:9443/webhooks", "https://op.example.com/okt/"])
def test_a_webhook_url_with_a_path_is_refused_as_okt_serves_none_under_it(url: str) -> None:
    with pytest.raises(errors.CodegenError, match="no path"):
        webhooks.ClientConfig(url=url)


@pytest.mark.parametrize(
    "url",
    [
        "https://",
        "https://:9443",
        "https://user@127.0.0.1:9443",
        "https://127.0.0.1:abc",
        "https://127.0.0.1:0",
        "https://127.0.0.1:99999",
        "https://op example.com:9443",
        "https://[::1:9443",
    ],
)
def test_a_webhook_url_the_api_server_cannot_call_is_refused(url: str) -> None:
    # Each was written into the configurations: the API server refused some, and the others were called in vain.
    with pytest.raises(errors.CodegenError, match=r"https://HOST\[:PORT\]"):
        webhooks.ClientConfig(url=url)


@pytest.mark.parametrize("url", ["https://[::1]:9443", "https://op.example.com", "https://127.0.0.1:65535"])
def test_a_webhook_url_of_a_host_and_a_port_is_taken(url: str) -> None:
    assert webhooks.ClientConfig(url=url).for_path("/validate/x") == {"url": f"{url}/validate/x"}


def test_a_webhook_url_with_a_trailing_slash_calls_okts_own_paths() -> None:
    config = webhooks.ClientConfig(url="https://127.0.0.1:9443/")
    assert config.for_path("/validate/memcached") == {"url": "https://127.0.0.1:9443/validate/memcached"}


@pytest.mark.parametrize(
    "content",
    [b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\n-----END PRIVATE KEY-----\n", b"\x30\x82\x01\x0a\x02\x82", b""],
    ids=["private-key", "der", "empty"],
)
@pytest.mark.parametrize("command", ["webhooks", "crd"])
def test_a_ca_bundle_that_is_not_a_pem_certificate_is_one_line_error(
    tmp_path: Path, content: bytes, command: str
) -> None:
    ca = tmp_path / "ca.crt"
    ca.write_bytes(content)
    group = cli.make_gen_group(loader(Memcached))

    result = CliRunner().invoke(group, [command, "operator.py", "--ca-bundle", str(ca)])

    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"Error: {ca} is not a PEM certificate")
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("reconciler", "arguments", "message"),
    [
        (Checked, ["webhooks", "operator.py", "--name", "Bad Name"], "invalid --name 'Bad Name'"),
        (Checked, ["webhooks", "operator.py", "--name", "9-operator"], "invalid --name '9-operator'"),
        (Checked, ["webhooks", "operator.py", "--name", "o" * 60], "at most 54 characters"),
        (Checked, ["webhooks", "operator.py", "--namespace", "a b"], "invalid --namespace 'a b'"),
        (Memcached, ["crd", "operator.py", "--namespace", "Ops"], "invalid --namespace 'Ops'"),
    ],
)
def test_a_name_the_api_server_would_refuse_is_one_line_error(
    reconciler: type[Any], arguments: list[str], message: str
) -> None:
    result = CliRunner().invoke(cli.make_gen_group(loader(reconciler)), arguments)

    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("Error: invalid --") and len(result.stderr.splitlines()) == 1
    assert message in result.stderr


class Cluster(Checked):
    kind = "Cluster"
    namespaced = False


def test_gen_webhooks_for_an_operator_serving_some_namespaces_and_labels_calls_it_for_those_only() -> None:
    group = cli.make_gen_group(loader(Memcached, Cluster))
    arguments = ["webhooks", "operator.py", "--watch-namespace", "shop", "--watch-namespace", "blog"]
    result = invoke([*arguments, "-l", "release=one,tier"], group)
    assert result.exit_code == 0, result.output
    _service, validating, mutating = yaml.safe_load_all(result.stdout)

    hooks = {hook["name"]: hook for doc in (validating, mutating) for hook in doc["webhooks"]}
    selected = {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["blog", "shop"]}
    labelled = [
        {"key": "release", "operator": "In", "values": ["one"]},
        {"key": "tier", "operator": "Exists"},
    ]
    for name in ("validate.memcacheds.cache.example.com", "default.memcacheds.cache.example.com"):
        assert hooks[name]["namespaceSelector"] == {"matchExpressions": [selected]}
        assert hooks[name]["objectSelector"] == {"matchExpressions": labelled}
    # a cluster-scoped object has no namespace: its webhook is narrowed by the labels only
    assert "namespaceSelector" not in hooks["validate.clusters.cache.example.com"]
    assert hooks["validate.clusters.cache.example.com"]["objectSelector"] == {"matchExpressions": labelled}


def test_gen_webhooks_for_an_operator_serving_everything_says_no_selector() -> None:
    result = invoke(["webhooks", "operator.py"], cli.make_gen_group(loader(Memcached)))
    assert result.exit_code == 0, result.output
    hooks = [hook for doc in yaml.safe_load_all(result.stdout) for hook in doc.get("webhooks", [])]
    assert hooks and all("namespaceSelector" not in hook and "objectSelector" not in hook for hook in hooks)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--watch-namespace", "Shop"], "invalid --watch-namespace 'Shop'"),
        (["--watch-namespace", "shop\n"], "invalid --watch-namespace 'shop\\n'"),  # a $ anchor took it
        (["-l", "release:one"], "invalid --selector: label selector 'release:one'"),
    ],
)
def test_a_scope_the_api_server_would_refuse_is_one_line_error(arguments: list[str], message: str) -> None:
    result = CliRunner().invoke(cli.make_gen_group(loader(Checked)), ["webhooks", "operator.py", *arguments])

    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"Error: {message}") and len(result.stderr.splitlines()) == 1


class CheckedAgain(Checked):
    """A second reconciler of Checked's kind, under the same default controller name."""


class CheckedNamed(Checked):
    name = "checked-audit"


def test_gen_webhooks_of_two_reconcilers_under_one_controller_name_is_one_line_error() -> None:
    result = CliRunner().invoke(cli.make_gen_group(loader(Checked, CheckedAgain)), ["webhooks", "op.py"])

    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "Checked and CheckedAgain are both named 'checked'" in result.output
    assert "set name on one of them" in result.output


def test_two_reconcilers_of_one_kind_under_their_own_names_get_a_webhook_each_under_its_own_name() -> None:
    (configuration,) = webhooks.webhooks_for_reconcilers(
        [Checked, CheckedNamed], name="x", client_config=webhooks.ClientConfig(url="https://127.0.0.1:9443")
    )

    hooks = {hook["name"]: hook["clientConfig"]["url"] for hook in configuration["webhooks"]}
    assert len(hooks) == 2
    assert sorted(hooks.values()) == [
        "https://127.0.0.1:9443/validate/checked",
        "https://127.0.0.1:9443/validate/checked-audit",
    ]


@pytest.mark.parametrize("named", [[], ["--name", "shop-operator"]], ids=["default-name", "name"])
def test_gen_crd_calls_the_service_gen_webhooks_writes(named: list[str]) -> None:
    # With the reconciler of converters second in the file, okt gen crd named a Service of its own kind
    # (memcached-operator-webhooks) where okt gen webhooks wrote checked-operator-webhooks; and it took no --name.
    group = cli.make_gen_group(loader(Checked, Memcached))
    service = invoke(["webhooks", "operator.py", "--namespace", "ops", *named], group)
    definitions = invoke(["crd", "operator.py", "--namespace", "ops", *named], group)
    assert service.exit_code == 0, service.output
    assert definitions.exit_code == 0, definitions.output

    written = next(document for document in yaml.safe_load_all(service.stdout) if document["kind"] == "Service")
    called = [
        definition["spec"]["conversion"]["webhook"]["clientConfig"]["service"]
        for definition in yaml.safe_load_all(definitions.stdout)
        if "conversion" in definition["spec"]
    ]
    assert called == [
        {"name": written["metadata"]["name"], "namespace": "ops", "path": "/convert/memcached", "port": 443}
    ]
    assert written["metadata"]["name"] == (f"{named[1]}-webhooks" if named else "checked-operator-webhooks")


class MemcachedOfAVeryLongKindNameThatMakesALongService(Memcached):
    kind = "MemcachedOfAVeryLongKindNameThatMakesALongService"  # 49 characters: <kind>-operator-webhooks is 67


class PlainOfAVeryLongKindNameThatMakesALongServiceName(Plain):
    kind = "PlainOfAVeryLongKindNameThatMakesALongServiceName"


@pytest.mark.parametrize("command", ["crd", "webhooks"])
def test_a_default_name_whose_service_is_longer_than_a_dns_label_is_one_line_error_naming_the_name_option(
    command: str,
) -> None:
    """Without --name, the Service is the first reconciler's <kind>-operator-webhooks: for a long kind longer than the
    63 characters of a DNS label, which the API server refuses once the CRD is applied, not before."""
    group = cli.make_gen_group(loader(MemcachedOfAVeryLongKindNameThatMakesALongService))

    result = CliRunner().invoke(group, [command, "operator.py"])

    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr == (
        "Error: the default name memcachedofaverylongkindnamethatmakesalongservice-operator (<kind>-operator, of the "
        "first reconciler) is too long for its webhooks' Service, "
        "memcachedofaverylongkindnamethatmakesalongservice-operator-webhooks: 67 characters, more than the 63 of a DNS "
        "label; give a name of at most 54 characters with --name\n"
    )


@pytest.mark.parametrize(
    ("reconciler", "arguments"),
    [
        (PlainOfAVeryLongKindNameThatMakesALongServiceName, []),  # no conversion webhook: no Service named
        (MemcachedOfAVeryLongKindNameThatMakesALongService, ["--url", "https://10.0.0.1:9443"]),  # called there
        (MemcachedOfAVeryLongKindNameThatMakesALongService, ["--name", "shop-operator"]),
    ],
    ids=["no-converters", "url", "name"],
)
def test_gen_crd_of_a_long_kind_whose_crd_names_no_default_service_is_written(
    reconciler: type[Any], arguments: list[str]
) -> None:
    result = invoke(["crd", "operator.py", *arguments], cli.make_gen_group(loader(reconciler)))

    assert result.exit_code == 0, result.output
    assert yaml.safe_load(result.stdout)["spec"]["names"]["kind"] == reconciler.kind


def test_gen_crd_refuses_a_name_whose_service_is_no_dns_label() -> None:
    result = CliRunner().invoke(cli.make_gen_group(loader(Memcached)), ["crd", "operator.py", "--name", "Shop"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("Error: invalid --name 'Shop': expected a DNS label")
    assert result.stdout == ""


class Deployments(okt.Reconciler):
    api_version = "apps/v1"
    kind = "Deployment"

    def check(self, ctx: okt.Context) -> None:
        return None


def test_the_webhook_of_a_built_in_kind_leaves_out_the_operator_s_own_workload_within_its_scope() -> None:
    everything = invoke(["webhooks", "operator.py"], cli.make_gen_group(loader(Deployments, Memcached)))
    scoped = invoke(["webhooks", "operator.py", "-l", "tier"], cli.make_gen_group(loader(Deployments)))
    assert everything.exit_code == 0 and scoped.exit_code == 0, everything.output + scoped.output

    hooks = {hook["name"]: hook for doc in yaml.safe_load_all(everything.stdout) for hook in doc.get("webhooks", [])}
    own = {"key": "okt.io/operator", "operator": "DoesNotExist"}
    assert hooks["validate.deployments.apps"]["objectSelector"] == {"matchExpressions": [own]}
    assert hooks["validate.deployments.apps"]["failurePolicy"] == "Fail"
    # a custom kind: okt makes no object of it for itself, its webhooks judge every object as before
    assert "objectSelector" not in hooks["validate.memcacheds.cache.example.com"]
    (hook,) = [hook for doc in yaml.safe_load_all(scoped.stdout) for hook in doc.get("webhooks", [])]
    assert hook["objectSelector"] == {"matchExpressions": [{"key": "tier", "operator": "Exists"}, own]}
